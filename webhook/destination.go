package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Options are a deployment's webhook settings, the same for its registry
// (NewRegistry(…).With) and its deliverers (Config.Options). The zero
// value refuses every non-public destination and keeps secrets in
// plaintext.
type Options struct {
	// AllowNetworks are the networks a destination may be in although
	// they are not public: loopback, private (RFC 1918, fc00::/7, the
	// shared 100.64.0.0/10), link-local (169.254.0.0/16, where cloud
	// metadata services answer; fe80::/10), unspecified and multicast
	// addresses are refused unless listed here (holdfast serve
	// --webhook-allow-networks). Nil: public addresses only.
	AllowNetworks []netip.Prefix
	// SecretKey encrypts endpoint secrets at rest: AES-256-GCM, 32 bytes
	// (SecretKeySize). Nil stores new secrets in plaintext and cannot read
	// encrypted ones (ErrSecretKey).
	SecretKey []byte
}

// ErrDestinationRefused: a webhook URL's host is, or resolves to, an
// address that is not public and not in Options.AllowNetworks. The
// registration answers it as an *holdfast.ArgumentError on "url"; a
// delivery records only "destination refused" as its last error (no
// address, port or dial detail: the error is not a port-scan oracle).
var ErrDestinationRefused = errors.New("webhook: destination refused (not a public address)")

// ResolveTimeout bounds the DNS lookup of a registration's host.
const ResolveTimeout = 5 * time.Second

// ParseNetworks parses a comma-separated list of CIDR networks or single
// addresses ("127.0.0.0/8,::1"), as --webhook-allow-networks takes it.
func ParseNetworks(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("webhook: %q is not a network (CIDR) or an address", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

var (
	sharedNet    = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT
	thisNet      = netip.MustParsePrefix("0.0.0.0/8")
	broadcast    = netip.MustParseAddr("255.255.255.255")
	nat64Mapped  = netip.MustParsePrefix("64:ff9b::/96")
	ipv4Compat   = netip.MustParsePrefix("::/96")
	documentNets = []netip.Prefix{netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15")}
)

// notPublic says what kind of non-public address a is, or "".
func notPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified() || thisNet.Contains(a):
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate() || sharedNet.Contains(a):
		return "private"
	case a.IsMulticast() || a.IsInterfaceLocalMulticast() || a == broadcast:
		return "multicast"
	case a.Is6() && (nat64Mapped.Contains(a) || ipv4Compat.Contains(a)):
		// An IPv4 address inside IPv6: judge the embedded one.
		b := a.As16()
		if k := notPublic(netip.AddrFrom4([4]byte(b[12:]))); k != "" {
			return k
		}
	}
	for _, p := range documentNets {
		if p.Contains(a) {
			return "reserved"
		}
	}
	return ""
}

// checkAddr refuses a unless it is public or in allow.
func checkAddr(a netip.Addr, allow []netip.Prefix) error {
	a = a.Unmap()
	kind := notPublic(a)
	if kind == "" {
		return nil
	}
	for _, p := range allow {
		if p.Contains(a) {
			return nil
		}
	}
	return &destinationError{kind: kind, addr: a}
}

// destinationError is a refused address: its kind and address for the
// registration's answer. It matches ErrDestinationRefused.
type destinationError struct {
	kind string
	addr netip.Addr
}

func (e *destinationError) Error() string {
	return fmt.Sprintf("%s address %s is not allowed (holdfast serve --webhook-allow-networks allows networks)", e.kind, e.addr)
}

func (e *destinationError) Is(target error) bool { return target == ErrDestinationRefused }

// numericHost reports a host that is no canonical IP address but looks
// like one to some resolver: "0x7f000001", "2130706433", "127.1",
// "0177.0.0.1". No DNS name has a numeric top-level label.
func numericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndex(host, ".")+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(strings.ToLower(last), "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// checkHost checks a URL's host: an IP literal against the policy; a
// name that only looks numeric is refused; a DNS name is resolved and
// every address it resolves to is checked. A name that does not resolve
// now is accepted: the dialer checks every connection anyway (dialControl),
// which also covers a name that resolves elsewhere later (DNS rebinding).
func checkHost(ctx context.Context, host string, allow []netip.Prefix) error {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return checkAddr(a.WithZone(""), allow)
	}
	if numericHost(host) {
		return fmt.Errorf("%w: %q is not a canonical IP address", ErrDestinationRefused, host)
	}
	ctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := checkAddr(a, allow); err != nil {
			return fmt.Errorf("%s resolves to a %w", host, err)
		}
	}
	return nil
}

// dialControl is the net.Dialer Control hook of the deliverer: every
// connection's address, after DNS resolution, is checked right before
// connect, whatever the URL said when it was registered.
func dialControl(allow []netip.Prefix) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return ErrDestinationRefused
		}
		return checkAddr(ap.Addr(), allow)
	}
}

// deliveryError is what an endpoint's last_error says of a failed request:
// a refused destination says only that, never the address, port or the
// dialer's words.
func deliveryError(err error) string {
	if errors.Is(err, ErrDestinationRefused) {
		return ErrDestinationRefused.Error()
	}
	return err.Error()
}
