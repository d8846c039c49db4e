"""Which IP addresses a page fetched for a caller may reach: the public-address rule that
web read (plugins/web) and the browser's filtering proxy (plugins/browser) share, offered
to plugins as `tollway.helpers.is_public_address`."""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(ip: IPAddress | str) -> bool:
    """True for a globally routable unicast address (and whatever IPv4 it embeds): never
    loopback, private, link-local (the cloud metadata address 169.254.169.254 among them),
    shared, reserved, multicast or unspecified. A string that is no IP address is not public."""
    if isinstance(ip, str):
        try:
            ip = ipaddress.ip_address(ip.split("%", 1)[0])
        except ValueError:
            return False
    if not ip.is_global or ip.is_multicast:
        return False
    inner = embedded_ipv4(ip)
    return inner is None or is_public_address(inner)
