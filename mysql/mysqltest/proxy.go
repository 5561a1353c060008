package mysqltest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/holdfast/holdfast/internal/faultproxy"
)

// Proxy is a TCP proxy in front of a MySQL/MariaDB server that understands
// just enough of the client/server protocol to find a transaction's COMMIT
// (a COM_QUERY packet whose text is COMMIT, as go-sql-driver's Tx.Commit
// sends it). When told to cut one, it passes the COMMIT on to the server,
// waits for the first packet of the server's answer, and closes both
// connections without relaying it: the server has committed (Committed
// counts the answers that were OK packets), the client cannot know. Safe
// for concurrent use. Its database-neutral half is internal/faultproxy,
// which postgres/faulttest.Proxy shares.
type Proxy struct {
	// The listener, connections, CutNext, Addr, Close, Cut (COMMIT answers
	// swallowed) and refusing: the database-neutral proxy.
	*faultproxy.Proxy

	mu      sync.Mutex
	markers []string // one cut each: the next COMMIT of a transaction that sent a statement containing the marker
	stalls  []*stall

	// Committed counts the cut COMMIT answers that were OK packets (the
	// server committed); Failed those that were error packets.
	Committed atomic.Int64
	Failed    atomic.Int64
}

// StartProxy listens on a free 127.0.0.1 port and forwards to target
// (host:port). It stops when t ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{}
	faultproxy.Start(t, target, func(fp *faultproxy.Proxy) faultproxy.Relay {
		p.Proxy = fp
		return p.relay
	})
	return p
}

// CutAfter arms the proxy to cut the answer of the next COMMIT of a
// transaction that sent a statement containing marker (a combined batch's
// COMMIT, say, while plain transactions commit alongside it).
func (p *Proxy) CutAfter(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markers = append(p.markers, marker)
}

type stall struct {
	marker  string
	stalled chan struct{}
	release chan struct{}
}

// StallAfter arms the proxy to hold back the next COMMIT of a transaction
// that sent a statement containing marker: stalled is closed when that
// COMMIT has reached the proxy (the transaction's work is done, its locks
// held, nothing committed), and the COMMIT goes on to the server when
// release is called (release is idempotent; the proxy's Close releases
// too).
func (p *Proxy) StallAfter(marker string) (stalled <-chan struct{}, release func()) {
	st := &stall{marker: marker, stalled: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.stalls = append(p.stalls, st)
	p.mu.Unlock()
	var once sync.Once
	return st.stalled, func() { once.Do(func() { close(st.release) }) }
}

// stallFor returns the armed stall this COMMIT meets, if any.
func (p *Proxy) stallFor(stmts []string) *stall {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, st := range p.stalls {
		for _, s := range stmts {
			if strings.Contains(s, st.marker) {
				p.stalls = append(p.stalls[:i], p.stalls[i+1:]...)
				return st
			}
		}
	}
	return nil
}

// RefuseAfterCut makes the next cut also start refusing new connections
// (accepted and closed at once), as if the server had become unreachable
// right after committing, until Refuse(false).
func (p *Proxy) RefuseAfterCut() { p.Proxy.RefuseAfterCut.Store(true) }

// Refuse starts or stops refusing new connections.
func (p *Proxy) Refuse(on bool) {
	p.Proxy.RefuseAfterCut.Store(false)
	p.Refusing.Store(on)
}

// decide reports whether this COMMIT's answer is cut, given the statements
// its transaction sent: a marker of CutAfter, or one armed by CutNext.
func (p *Proxy) decide(stmts []string) bool {
	p.mu.Lock()
	for i, m := range p.markers {
		for _, s := range stmts {
			if strings.Contains(s, m) {
				p.markers = append(p.markers[:i], p.markers[i+1:]...)
				p.mu.Unlock()
				return true
			}
		}
	}
	p.mu.Unlock()
	return p.TakeArmed()
}

const (
	comQuery      = 0x03
	maxPacketSize = 1<<24 - 1 // a packet this long continues in the next
)

// relay passes one connection's MySQL protocol packets on, cutting the
// COMMIT answers decide picks.
func (p *Proxy) relay(client, server net.Conn) {
	// cutting is set by the client side before it forwards a COMMIT to be
	// cut. The protocol is request-response and the client sent COMMIT only
	// after reading the whole previous answer, so the next packet from the
	// server is the COMMIT's answer.
	var cutting atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(server)
		for {
			pkt, err := readPacket(r)
			if err != nil {
				client.Close()
				return
			}
			if cutting.Load() {
				switch {
				case len(pkt) > 4 && pkt[4] == 0x00:
					p.Committed.Add(1)
				case len(pkt) > 4 && pkt[4] == 0xff:
					p.Failed.Add(1)
				}
				p.Cutoff(client, server)
				return
			}
			if _, err := client.Write(pkt); err != nil {
				server.Close()
				return
			}
		}
	}()

	// Client to server: every packet is passed on; the statements of the
	// current transaction are remembered (for CutAfter) until it ends.
	r := bufio.NewReader(client)
	var stmts []string
	continued := false
	for {
		pkt, err := readPacket(r)
		if err != nil {
			server.Close()
			break
		}
		payload := pkt[4:]
		if !continued && len(payload) > 0 && payload[0] == comQuery {
			q := string(payload[1:])
			word := strings.ToUpper(strings.TrimSpace(stripComments(q)))
			switch word {
			case "COMMIT":
				if st := p.stallFor(stmts); st != nil {
					close(st.stalled)
					select {
					case <-st.release:
					case <-p.Closing():
					}
				}
				if p.decide(stmts) {
					cutting.Store(true)
				}
				stmts = stmts[:0]
			case "ROLLBACK", "START TRANSACTION", "BEGIN":
				stmts = stmts[:0]
			default:
				if len(stmts) < 256 {
					stmts = append(stmts, q)
				}
			}
		}
		continued = len(payload) == maxPacketSize
		if _, err := server.Write(pkt); err != nil {
			break
		}
		if cutting.Load() {
			break // the server side closes both once the answer starts
		}
	}
	<-done
}

// stripComments drops a leading /* … */ comment (the engine's attribution
// tag) so "/* … */ COMMIT" is recognised too.
func stripComments(q string) string {
	q = strings.TrimSpace(q)
	for strings.HasPrefix(q, "/*") {
		end := strings.Index(q, "*/")
		if end < 0 {
			return q
		}
		q = strings.TrimSpace(q[end+2:])
	}
	return q
}

// readPacket reads one protocol packet (3-byte little-endian length,
// sequence number, payload) and returns all of its bytes.
func readPacket(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	pkt := make([]byte, 4+n)
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(r, pkt[4:]); err != nil {
		return nil, err
	}
	return pkt, nil
}
