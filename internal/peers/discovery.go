package peers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	"github.com/clockwatch/clockwatch/internal/kubernetes"
)

// Resolver looks names up; *net.Resolver fits.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// NodeLister lists the cluster's Nodes; *kubernetes.Client fits.
type NodeLister interface {
	ListNodeAddresses(ctx context.Context) ([]kubernetes.NodeAddress, error)
}

var _ NodeLister = (*kubernetes.Client)(nil)

// Discovery finds the peers from the three places a user has them: a static
// list, the addresses of a DNS name (a headless Service in front of the
// DaemonSet), and the Kubernetes API's Nodes. Each refresh asks each place
// configured; a place that fails keeps the peers it gave last.
type Discovery struct {
	// Static are "host:port" peers; a host name is looked up at every
	// refresh (its first address).
	Static []string
	// DNS is a name whose every A and AAAA record is a peer on Port.
	DNS string
	// Kubernetes, when set, lists the Nodes: each InternalIP is a peer on
	// Port, named after its Node; Self (this node's name) is left out.
	Kubernetes NodeLister
	Self       string
	// Port is the peers' port for DNS and Kubernetes.
	Port uint16
	// Resolver looks names up (static hosts, DNS).
	Resolver Resolver
	// LocalAddrs are this host's addresses: a DNS record or a Node address
	// among them is this node, left out (nil: none left out).
	LocalAddrs func() ([]netip.Addr, error)

	mu     sync.Mutex
	last   map[string][]Peer
	failed map[string]bool
}

// Places returns each configured place and whether its last refresh
// worked.
func (d *Discovery) Places() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]bool{}
	for place, on := range map[string]bool{"static": len(d.Static) > 0, "dns": d.DNS != "", "kubernetes": d.Kubernetes != nil} {
		if on {
			out[place] = !d.failed[place]
		}
	}
	return out
}

// Refresh asks every configured place for its peers and returns them all,
// each address once, sorted by name. err says which places failed (their
// last peers are kept).
func (d *Discovery) Refresh(ctx context.Context) ([]Peer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last, d.failed = map[string][]Peer{}, map[string]bool{}
	}
	var local []netip.Addr
	if d.LocalAddrs != nil {
		local, _ = d.LocalAddrs()
	}
	self := func(a netip.Addr) bool { return slices.Contains(local, a.Unmap()) }
	var errs []error
	update := func(place string, ps []Peer, err error) {
		d.failed[place] = err != nil
		if err != nil {
			errs = append(errs, fmt.Errorf("peers.%s: %w", place, err))
			return
		}
		d.last[place] = ps
	}
	if len(d.Static) > 0 {
		ps, err := d.static(ctx)
		update("static", ps, err)
	}
	if d.DNS != "" {
		ps, err := d.dns(ctx, self)
		update("dns", ps, err)
	}
	if d.Kubernetes != nil {
		ps, err := d.nodes(ctx, self)
		update("kubernetes", ps, err)
	}
	var all []Peer
	seen := map[string]bool{}
	for _, place := range []string{"static", "dns", "kubernetes"} {
		for _, p := range d.last[place] {
			if !seen[p.Addr] {
				seen[p.Addr] = true
				all = append(all, p)
			}
		}
	}
	slices.SortFunc(all, func(a, b Peer) int { return cmp.Compare(a.Name, b.Name) })
	return all, errors.Join(errs...)
}

func (d *Discovery) static(ctx context.Context) ([]Peer, error) {
	var out []Peer
	var errs []error
	for _, s := range d.Static {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			as, lerr := d.Resolver.LookupNetIP(ctx, "ip", host)
			if lerr != nil || len(as) == 0 {
				errs = append(errs, fmt.Errorf("%s: %w", s, cmp.Or(lerr, errors.New("no address"))))
				continue
			}
			a = as[0]
		}
		out = append(out, Peer{Name: s, Addr: net.JoinHostPort(a.Unmap().String(), port)})
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A name that does not resolve now leaves the others measured.
	return out, nil
}

func (d *Discovery) dns(ctx context.Context, self func(netip.Addr) bool) ([]Peer, error) {
	as, err := d.Resolver.LookupNetIP(ctx, "ip", d.DNS)
	if err != nil {
		return nil, err
	}
	var out []Peer
	for _, a := range as {
		if self(a) {
			continue
		}
		addr := net.JoinHostPort(a.Unmap().String(), strconv.Itoa(int(d.Port)))
		out = append(out, Peer{Name: addr, Addr: addr})
	}
	return out, nil
}

func (d *Discovery) nodes(ctx context.Context, self func(netip.Addr) bool) ([]Peer, error) {
	ns, err := d.Kubernetes.ListNodeAddresses(ctx)
	if err != nil {
		return nil, err
	}
	var out []Peer
	for _, n := range ns {
		a, err := netip.ParseAddr(n.InternalIP)
		if err != nil || n.Name == d.Self || self(a) {
			continue // a Node without an InternalIP is not reachable
		}
		out = append(out, Peer{Name: n.Name, Addr: net.JoinHostPort(a.Unmap().String(), strconv.Itoa(int(d.Port)))})
	}
	return out, nil
}

// InterfaceAddrs returns this host's addresses (LocalAddrs' real one).
func InterfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}
