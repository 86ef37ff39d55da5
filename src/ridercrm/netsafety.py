"""Where webhooks may be sent: no loopback, private, link-local or metadata addresses.

An endpoint's URL is checked when it is registered and again before every attempt, and
the attempt connects to the very address that was checked, so a host name that later
resolves somewhere else (DNS rebinding) cannot steer a delivery inside the network.
``RIDERCRM_WEBHOOK_ALLOWED_HOSTS`` lets an operator allow named hosts or CIDR ranges, at
every port or at one (``127.0.0.1:9000``);
the entries a URL needed when it was registered are stored with its endpoint and honoured
by every deliverer (``Target.allowed``).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata services that are not link-local (169.254.169.254 is, and so refused).
METADATA = (
    ipaddress.ip_network("100.100.100.200/32"),  # Alibaba Cloud
    ipaddress.ip_network("fd00:ec2::254/128"),  # AWS over IPv6
)


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks; the message says why."""


@dataclass(frozen=True)
class AllowList:
    """Hosts and ranges an operator allows although they are not public: at any port, or
    at one port only (``host:port``, ``10.0.0.0/8:443``, ``[::1]:9000``)."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    host_ports: frozenset[tuple[str, int]] = frozenset()
    network_ports: tuple[tuple[IPNetwork, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> AllowList:
        """Read "host,10.0.0.0/8,127.0.0.1:9000"; raise ValueError on a bad range or port."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        host_ports: set[tuple[str, int]] = set()
        network_ports: list[tuple[IPNetwork, int]] = []
        for raw in text.split(","):
            item, port = _split_port(raw.strip().lower(), raw.strip())
            if not item:
                continue
            try:
                network = ipaddress.ip_network(item, strict=False)
            except ValueError:
                if "/" in item:
                    raise ValueError(f"{raw.strip()!r} is not a CIDR range") from None
                name = item.strip("[]")
                hosts.add(name) if port is None else host_ports.add((name, port))
            else:
                networks.append(network) if port is None else network_ports.append((network, port))
        return cls(frozenset(hosts), tuple(networks), frozenset(host_ports), tuple(network_ports))

    def allows(self, host: str, address: IPAddress, port: int | None = None) -> bool:
        return bool(self.entries_for(host, address, port))

    def entries_for(self, host: str, address: IPAddress, port: int | None = None) -> list[str]:
        """The entries that allow ``address`` for ``host`` (at ``port``): its name, or the
        ranges it is in; an entry of one port allows only that port."""
        name = host.lower()
        if name in self.hosts:
            return [name]
        if port is not None and (name, port) in self.host_ports:
            return [_with_port(name, port)]
        found = [str(net) for net in self.networks if address in net]
        if found or port is None:
            return found
        return [
            _with_port(str(net), port)
            for net, only in self.network_ports
            if only == port and address in net
        ]

    def union(self, other: AllowList) -> AllowList:
        """What either list allows."""
        if not (other.hosts or other.networks or other.host_ports or other.network_ports):
            return self
        networks = tuple(dict.fromkeys((*self.networks, *other.networks)))
        network_ports = tuple(dict.fromkeys((*self.network_ports, *other.network_ports)))
        return AllowList(
            self.hosts | other.hosts,
            networks,
            self.host_ports | other.host_ports,
            network_ports,
        )


def _split_port(item: str, raw: str) -> tuple[str, int | None]:
    """An entry and its port, if it names one: ``name:port``, ``[v6 address or range]:port``
    (a bare IPv6 address has colons of its own and names none)."""
    text, port = item, ""
    if item.startswith("[") and "]:" in item:
        text, port = item[1:].split("]:", 1)
    elif item.count(":") == 1:
        text, port = item.split(":", 1)
    if not port:
        return text, None
    if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        raise ValueError(f"{raw!r}: the port must be a number from 1 to 65535")
    return text, int(port)


def _with_port(entry: str, port: int) -> str:
    """An entry of one port, as ``AllowList.parse`` reads it back."""
    return f"[{entry}]:{port}" if ":" in entry else f"{entry}:{port}"


@dataclass(frozen=True)
class Target:
    """A checked URL and the address to connect to."""

    url: SplitResult
    host: str
    port: int
    address: str
    # The allow-list entries its non-public addresses needed (AllowList.parse reads them
    # back), in the form RIDERCRM_WEBHOOK_ALLOWED_HOSTS takes; empty for a public host.
    allowed: tuple[str, ...] = ()


def parse_url(url: str) -> SplitResult:
    """Check the URL's form: http or https, a host, no fragment."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in url):
        # urlsplit drops tabs and line breaks: the URL sent to would not be the one shown.
        raise UnsafeUrl("url: must not hold control characters")
    if any(ch.isspace() for ch in url):
        raise UnsafeUrl("url: must not hold spaces (write them %20)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"url: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("url: must start with http:// or https://")
    if not parts.hostname:
        raise UnsafeUrl("url: has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeUrl("url: must not carry a user name or password")
    if parts.fragment:
        raise UnsafeUrl("url: must not have a #fragment")
    if port == 0:
        raise UnsafeUrl("url: port 0 is not a port")
    return parts


def _refusal(address: IPAddress) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour is not None:
        # A 6to4 address carries an IPv4 address, where a relay sends the packets.
        carried = _refusal(address.sixtofour)
        if carried is not None:
            return carried
    if address.is_loopback:
        return "loopback"
    if address.is_multicast or address.is_unspecified:
        return "multicast or unspecified"
    if address.is_link_local:
        return "link-local (cloud metadata)"
    if any(address in net for net in METADATA):
        return "cloud metadata"
    if address.is_private:
        return "private"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        # fec0::/10, the deprecated site-local range: private networks that predate
        # unique local addresses, and not private to Python's ipaddress.
        return "private (site-local)"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "non-public"
    return None


def resolve(url: str, allow: AllowList) -> Target:
    """Check the URL and every address its host resolves to; the address to connect to."""
    parts = parse_url(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeUrl(f"url: host {host} does not resolve ({exc})") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UnsafeUrl(f"url: host {host} does not resolve")
    allowed: list[str] = []
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        reason = _refusal(address)
        if reason is None:
            continue
        entries = allow.entries_for(host, address, port)
        # Any one disallowed address refuses the host: a resolver may answer with either.
        if not entries:
            raise UnsafeUrl(
                f"url: {host} resolves to {address}, a {reason} address;"
                " allow it with RIDERCRM_WEBHOOK_ALLOWED_HOSTS"
            )
        allowed.extend(entries)
    return Target(
        url=parts,
        host=host,
        port=port,
        address=addresses[0],
        allowed=tuple(dict.fromkeys(allowed)),
    )
