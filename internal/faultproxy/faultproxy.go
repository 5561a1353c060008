// Package faultproxy is the database-neutral half of the tests' commit-cutting
// TCP proxies (postgres/faulttest.Proxy, mysql/mysqltest.Proxy): a listener
// on a free 127.0.0.1 port forwarding each connection to a target, the
// connections it tracks, refusing and severing them, the count of commits
// armed to be cut, and the bookkeeping of a cut. What a connection's bytes
// mean — where a COMMIT and its answer are — is the caller's Relay, written
// for its database's wire protocol.
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Relay passes one proxied connection's traffic between client and server
// until either side ends; it owns neither connection's closing (the proxy
// closes both when Relay returns). It calls Proxy.Cutoff to cut a commit.
type Relay func(client, server net.Conn)

// Proxy forwards connections to a target through a Relay. Safe for
// concurrent use.
type Proxy struct {
	ln        net.Listener
	target    string
	relay     Relay
	closing   chan struct{} // closed by Close
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	armed int

	// Cut counts commits cut (Cutoff calls).
	Cut atomic.Int64
	// Severed counts client connections closed by SeverAll.
	Severed atomic.Int64
	// SeverOnCut, when set, makes every cut sever every other connection
	// too (a partition as the answer is lost).
	SeverOnCut atomic.Bool
	// RefuseAfterCut, when set, makes a cut start Refusing.
	RefuseAfterCut atomic.Bool
	// Refusing closes every new connection at once (the server out of
	// reach), until it is cleared.
	Refusing atomic.Bool
	wg       sync.WaitGroup
}

// Start listens on a free 127.0.0.1 port and forwards every connection to
// target (host:port) through the Relay newRelay returns. newRelay is called
// once, before the first connection is accepted: a caller embedding the
// Proxy sets its field there. It stops when t ends.
func Start(t testing.TB, target string, newRelay func(*Proxy) Relay) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, closing: make(chan struct{})}
	p.relay = newRelay(p)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Closing is closed when Close begins: a relay holding a message back
// lets it go.
func (p *Proxy) Closing() <-chan struct{} { return p.closing }

// Close stops the proxy, closes every connection and waits for the relays.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() { close(p.closing) })
	p.ln.Close()
	p.SeverAll()
	p.wg.Wait()
}

// CutNext arms the proxy to cut the next n commits.
func (p *Proxy) CutNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed += n
}

// TakeArmed reports whether a commit armed by CutNext is left, and uses it.
func (p *Proxy) TakeArmed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed > 0 {
		p.armed--
		return true
	}
	return false
}

// SeverAll closes every open connection at once (a network partition that
// heals immediately) and returns how many client connections it closed.
func (p *Proxy) SeverAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		c.Close()
		n++
	}
	p.Severed.Add(int64(n / 2))
	return n / 2
}

// Cutoff is a relay's cut: the server has answered a commit and the answer
// is not passed on. It starts Refusing if RefuseAfterCut is set, counts the
// cut, untracks and closes both connections and, if SeverOnCut is set,
// every other.
func (p *Proxy) Cutoff(client, server net.Conn) {
	if p.RefuseAfterCut.Load() {
		p.Refusing.Store(true)
	}
	p.Cut.Add(1)
	// Untracked before they close, not when the relay's goroutine ends:
	// a SeverAll after the client saw the cut counts only the others.
	p.track(client, false)
	p.track(server, false)
	client.Close()
	server.Close()
	if p.SeverOnCut.Load() {
		p.SeverAll()
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.Refusing.Load() {
			client.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(client)
		}()
	}
}

// serve dials the target for client and relays between them.
func (p *Proxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	p.track(client, true)
	p.track(server, true)
	defer p.track(client, false)
	defer p.track(server, false)
	p.relay(client, server)
}
