import datetime as dt
import random

from ridercrm.matching.model import Model
from ridercrm.matching.training import train
from ridercrm.people.blocking import Identity

GIVEN = ["ann", "bob", "chloe", "dan", "eve", "fay", "gus", "hal", "ivy", "jo", "kai", "liam"]
FAMILY = ["nguyen", "smith", "jones", "brown", "tran", "lee", "walker", "hall", "young", "king"]


def _people(count: int, *, duplicates: int, seed: int = 1) -> list[Identity]:
    rng = random.Random(seed)
    people = [
        Identity.of(
            first_name=rng.choice(GIVEN), last_name=rng.choice(FAMILY),
            date_of_birth=dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(20000)),
            email=f"p{n}@example.com", phones=(), drivers_license=f"L{rng.randrange(10**7)}",
            street=f"{rng.randrange(1, 200)} {rng.choice(FAMILY)} street",
            postcode=str(rng.randrange(3000, 3100)),
        )
        for n in range(count)
    ]  # fmt: skip
    # each duplicate: a copy whose e-mail and licence were re-typed, the rest as stored
    for person in people[:duplicates]:
        people.append(
            Identity.of(
                first_name=" ".join(person.first), last_name=" ".join(person.last),
                date_of_birth=person.date_of_birth, email="other@example.com", phones=(),
                drivers_license=person.licence, street=person.raw_street, postcode=person.postcode,
            )
        )  # fmt: skip
    return people


def test_u_comes_from_random_pairs_and_m_from_the_duplicates() -> None:
    model = train(_people(1500, duplicates=300), random_pairs=20_000)
    given_u = model.levels["given_name"]["exact"][1]
    assert 0.05 < given_u < 0.15  # one of twelve names: about 1/12 of random pairs agree
    # m by EM: the duplicates' licences agree, so m of an exact licence rises above the prior
    assert model.levels["licence"]["exact"][0] > 0.9
    assert model.weights["licence"]["exact"] > model.weights["licence"]["different"]
    assert model.tf["given_name"].values["ann"] > model.tf["given_name"].rare


def test_a_model_survives_storage() -> None:
    model = train(_people(200, duplicates=0), random_pairs=2_000)
    again = Model.from_json(model.to_json())
    assert again.levels == model.levels
    assert again.weights == model.weights
