"""CSV columns of each kind of record: our names, a Salesforce export's, and header matching.

A file may use the interface's field names or the headers of a Salesforce export
(standard fields plus the custom fields ``Drivers_License__c``, ``License_Type__c``
and ``Opt_In__c``). Headers match case-insensitively. A column that is none of these
refuses the file (with the accepted header it most looks like: ``frist_name`` → did you
mean ``first_name``), unless the import names it to be ignored (``--ignore-columns``):
a misspelled column would otherwise lose its data without a word.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ridercrm.errors import DomainError
from ridercrm.ids import RecordKind
from ridercrm.people.models import CONTACT, LEAD, PERSON_FIELDS

PRODUCT_FIELDS = ("name", "code", "price", "active")

_SALESFORCE_CONTACT = {
    "id": "Id",
    "first_name": "FirstName",
    "last_name": "LastName",
    "date_of_birth": "Birthdate",
    "email": "Email",
    "postcode": "MailingPostalCode",
    "mobile_phone": "MobilePhone",
    "home_phone": "HomePhone",
    "drivers_license": "Drivers_License__c",
    "license_type": "License_Type__c",
    "street": "MailingStreet",
    "city": "MailingCity",
    "state": "MailingState",
    "country": "MailingCountry",
    "lead_source": "LeadSource",
    "opt_in": "Opt_In__c",
}
_SALESFORCE_LEAD = {
    **_SALESFORCE_CONTACT,
    "postcode": "PostalCode",
    "home_phone": "Phone",
    "street": "Street",
    "city": "City",
    "state": "State",
    "country": "Country",
    "converted_contact_id": "ConvertedContactId",
}
_SALESFORCE_PRODUCT = {
    "id": "Id",
    "name": "Name",
    "code": "ProductCode",
    "price": "UnitPrice",
    "active": "IsActive",
}  # "Price" is accepted too: it is our "price" in another case.
# Address columns without the Mailing prefix (a lead export's) are read for contacts
# too, and the Mailing ones for leads; HomePhone is a lead's home phone as well.
_ADDRESS_ALIASES = {
    "PostalCode": "postcode",
    "Street": "street",
    "City": "city",
    "State": "state",
    "Country": "country",
}
_MAILING_ALIASES = {
    "MailingPostalCode": "postcode",
    "MailingStreet": "street",
    "MailingCity": "city",
    "MailingState": "state",
    "MailingCountry": "country",
    "HomePhone": "home_phone",
}


# A merged record (docs/decisions.md, "Duplicates (issue 15)"): the survivor it stands
# for. Salesforce's name for the record a merged one went into is MasterRecordId.
MERGED_INTO = "merged_into"
EXPORT_ONLY_SALESFORCE = {MERGED_INTO: "MasterRecordId"}


@dataclass(frozen=True)
class Target:
    """One kind of record that can be imported and exported."""

    name: str
    singular: str
    record_kind: RecordKind
    person_kind: str | None
    fields: tuple[str, ...]
    required: tuple[str, ...]
    salesforce: Mapping[str, str]
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Exported after the fields; an import reads them too (a merged record stays merged).
    export_only: tuple[str, ...] = ()

    def count(self, number: int) -> str:
        """``number`` records of this kind in words: "1 contact", "2 contacts"."""
        return f"{number} {self.singular if number == 1 else self.name}"

    def header(self, form: str) -> list[str]:
        """The export header in our names ("ours") or a Salesforce export's ("salesforce")."""
        names = ("id", *self.fields, *self.export_only)
        if form == "salesforce":
            return [self.salesforce.get(name) or EXPORT_ONLY_SALESFORCE[name] for name in names]
        return list(names)

    def lookup(self) -> dict[str, str]:
        """Every header this kind accepts, case-folded, with the field it fills."""
        found: dict[str, str] = {}
        for name in ("id", *self.fields):
            found[name.casefold()] = name
        for name, header in self.salesforce.items():
            found[header.casefold()] = name
        for header, name in self.aliases.items():
            found[header.casefold()] = name
        for name in self.export_only:
            found[name.casefold()] = name
            found[EXPORT_ONLY_SALESFORCE[name].casefold()] = name
        return found


CONTACTS = Target(
    name="contacts",
    singular="contact",
    record_kind=RecordKind.CONTACT,
    person_kind=CONTACT,
    fields=PERSON_FIELDS,
    required=("last_name",),
    salesforce=_SALESFORCE_CONTACT,
    aliases=_ADDRESS_ALIASES,
    export_only=(MERGED_INTO,),
)
LEADS = Target(
    name="leads",
    singular="lead",
    record_kind=RecordKind.LEAD,
    person_kind=LEAD,
    fields=(*PERSON_FIELDS, "converted_contact_id"),
    required=("last_name",),
    salesforce=_SALESFORCE_LEAD,
    aliases=_MAILING_ALIASES,
    export_only=(MERGED_INTO,),
)
PRODUCTS = Target(
    name="products",
    singular="product",
    record_kind=RecordKind.PRODUCT,
    person_kind=None,
    fields=PRODUCT_FIELDS,
    required=("name", "code", "price"),
    salesforce=_SALESFORCE_PRODUCT,
)
TARGETS: Mapping[str, Target] = {target.name: target for target in (CONTACTS, LEADS, PRODUCTS)}


class HeaderProblem(DomainError, ValueError):
    """The header row cannot be used: a required column is missing or a field repeats."""


@dataclass(frozen=True)
class ColumnPlan:
    """Which cell of a row fills which field, and the columns that are ignored."""

    cells: tuple[tuple[int, str], ...]
    ignored: tuple[str, ...]
    width: int
    # Columns whose header cell is empty: nothing to store them as, so a row holding a
    # value in one is a bad row (its value would be lost), an empty one is fine.
    blank: tuple[int, ...] = ()


def plan_columns(
    target: Target, header: Sequence[str], *, ignore: Collection[str] = ()
) -> ColumnPlan:
    """Match a header row to ``target``'s fields, or raise HeaderProblem saying why not.

    Every column must be one ``target`` accepts or one named in ``ignore`` (any case).
    """
    if len(header) == 1 and ";" in header[0]:
        raise HeaderProblem(
            "the header is one column holding semicolons: the file looks semicolon-separated;"
            " save it as comma-separated CSV (CSV UTF-8 in Excel)"
        )
    lookup = target.lookup()
    allowed = {name.strip().casefold() for name in ignore}
    cells: list[tuple[int, str]] = []
    ignored: list[str] = []
    unknown: list[str] = []
    column_of: dict[str, str] = {}
    blank: list[int] = []
    for index, raw in enumerate(header):
        name = raw.strip()
        found = lookup.get(name.casefold())
        if not name:
            blank.append(index)
            continue
        if found is None:
            if name and name.casefold() in allowed:
                ignored.append(name)
            elif name:
                unknown.append(name)
            continue
        if found in column_of:
            raise HeaderProblem(f"columns {column_of[found]} and {name} both give {found}")
        column_of[found] = name
        cells.append((index, found))
    if unknown:
        raise HeaderProblem(_unknown_columns(target, unknown))
    for required in target.required:
        if required not in column_of:
            spelled = target.salesforce.get(required, required)
            raise HeaderProblem(f"no {required} column (or {spelled})")
    return ColumnPlan(
        cells=tuple(cells), ignored=tuple(ignored), width=len(header), blank=tuple(blank)
    )


def _unknown_columns(target: Target, unknown: Sequence[str]) -> str:
    """Name each unknown column, with the accepted header it most looks like, and the
    option that imports the file without them."""
    accepted = sorted({*target.lookup().values(), *target.salesforce.values()})
    folded = {name.casefold(): name for name in accepted}
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.75)
        named.append(f"{name} (did you mean {folded[close[0]]}?)" if close else name)
    return (
        f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(named)}; nothing imported."
        f" Rename {'them' if len(unknown) > 1 else 'it'}, or import without"
        f" {'them' if len(unknown) > 1 else 'it'}: --ignore-columns {','.join(unknown)}"
    )
