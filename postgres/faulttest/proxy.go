package faulttest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/holdfast/holdfast/internal/faultproxy"
)

// Proxy is a TCP proxy in front of a PostgreSQL server (or PgBouncer) that
// understands just enough of the wire protocol to find the server's answer
// to a COMMIT (its CommandComplete, in the simple or the extended protocol,
// alone or at the end of a pipeline). When told to cut one, it lets the
// COMMIT reach the server, and when the server answers that it committed,
// closes both connections without passing the answer on: the client's commit outcome is unknown to
// it, and the truth is "committed". Safe for concurrent use.
type Proxy struct {
	// The listener, connections, CutNext, SeverAll, Refusing,
	// RefuseAfterCut, SeverOnCut, Cut and Severed: the database-neutral
	// proxy. Cut counts commits cut after the server answered.
	*faultproxy.Proxy

	mu    sync.Mutex
	rng   *rand.Rand
	rate  float64
	pids  map[uint32]bool // backends whose next COMMIT answer is cut
	whole map[uint32]bool // backends whose next pipeline with a COMMIT is cut whole

	// CutCommitted counts the cut commits the server answered with
	// COMMIT: since only COMMIT answers are cut, it equals Cut (both kept
	// for the tally's two lines).
	CutCommitted atomic.Int64
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

// CutBackend arms the proxy to cut the next COMMIT answer of the backend
// with process id pid (pgconn.PgConn.PID: the proxy reads it from the
// server's BackendKeyData), whatever other connections commit meanwhile.
func (p *Proxy) CutBackend(pid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pids == nil {
		p.pids = map[uint32]bool{}
	}
	p.pids[pid] = true
}

// CutBackendPipeline arms the proxy to swallow the whole answer of the
// next pipeline of backend pid that ends in a COMMIT, and then drop the
// connection: the client learns nothing of the pipeline, not even the
// statements' answers before the COMMIT's (CutBackend passes those on).
// Arm it between pipelines (the combiner's SetBeforeBatchCommit hook is):
// from then on the backend's answers are held until each ReadyForQuery.
func (p *Proxy) CutBackendPipeline(pid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.whole == nil {
		p.whole = map[uint32]bool{}
	}
	p.whole[pid] = true
}

func (p *Proxy) wholeArmed(pid uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.whole[pid]
}

func (p *Proxy) disarmWhole(pid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.whole, pid)
}

// SetCutRate cuts each commit with probability rate, drawing from a
// generator seeded with seed.
func (p *Proxy) SetCutRate(rate float64, seed uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rng = rand.New(rand.NewPCG(seed, seed^0xc0de))
	p.rate = rate
}

// decide reports whether backend pid's COMMIT answer is cut: armed for
// that backend, armed by CutNext, or drawn at the cut rate.
func (p *Proxy) decide(pid uint32) bool {
	p.mu.Lock()
	mine := p.pids[pid]
	delete(p.pids, pid)
	p.mu.Unlock()
	if mine || p.TakeArmed() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng != nil && p.rate > 0 && p.rng.Float64() < p.rate
}

const (
	sslRequestCode    = 80877103
	gssencRequestCode = 80877104
)

// relay passes one connection's PostgreSQL protocol messages on, cutting
// the COMMIT answers decide picks.
func (p *Proxy) relay(client, server net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Server to client: pass messages on. When the server answers a
		// COMMIT (simple query, or the last statement of a pipeline, as
		// the combiner sends it) and this commit is to be cut, swallow the
		// answer up to ReadyForQuery and drop both connections: the server
		// committed, the client never learns it.
		r := bufio.NewReader(server)
		cutting := false
		var pid uint32
		// held are the answers of the current pipeline of a backend armed
		// by CutBackendPipeline, passed on at its ReadyForQuery unless the
		// pipeline committed.
		var held [][]byte
		holding, committed := false, false
		for {
			typ, msg, err := readMessage(r)
			if err != nil {
				client.Close()
				return
			}
			if typ == 'K' && len(msg) >= 9 {
				pid = binary.BigEndian.Uint32(msg[5:9])
			}
			if !holding && pid != 0 && p.wholeArmed(pid) {
				holding = true
			}
			if holding {
				held = append(held, msg)
				committed = committed || (typ == 'C' && strings.HasPrefix(string(msg[5:]), "COMMIT"))
				if typ != 'Z' {
					continue
				}
				if committed {
					p.disarmWhole(pid)
					p.CutCommitted.Add(1)
					p.Cutoff(client, server)
					return
				}
				for _, m := range held {
					if _, err := client.Write(m); err != nil {
						server.Close()
						return
					}
				}
				held, holding = nil, false
				continue
			}
			if !cutting && typ == 'C' && strings.HasPrefix(string(msg[5:]), "COMMIT") && p.decide(pid) {
				cutting = true
			}
			if cutting {
				if typ == 'Z' {
					p.CutCommitted.Add(1)
					p.Cutoff(client, server)
					return
				}
				continue
			}
			if _, err := client.Write(msg); err != nil {
				server.Close()
				return
			}
		}
	}()

	// Client to server: the startup packet (answering SSL and GSS
	// encryption requests with "no"), then typed messages.
	r := bufio.NewReader(client)
	for {
		n, msg, err := readStartup(r)
		if err != nil {
			server.Close()
			<-done
			return
		}
		if n == sslRequestCode || n == gssencRequestCode {
			if _, err := client.Write([]byte{'N'}); err != nil {
				server.Close()
				<-done
				return
			}
			continue
		}
		if _, err := server.Write(msg); err != nil {
			<-done
			return
		}
		break
	}
	for {
		_, msg, err := readMessage(r)
		if err != nil {
			server.Close()
			break
		}
		if _, err := server.Write(msg); err != nil {
			break
		}
	}
	<-done
}

// readStartup reads an untyped startup-phase packet and returns its code
// (protocol version or request code) and its bytes.
func readStartup(r *bufio.Reader) (uint32, []byte, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 8 || n > 1<<20 {
		return 0, nil, fmt.Errorf("proxy: bad startup length %d", n)
	}
	msg := make([]byte, n)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[8:]); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(hdr[4:]), msg, nil
}

// readMessage reads one typed protocol message and returns its type and all
// of its bytes (type and length included).
func readMessage(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<30 {
		return 0, nil, errors.New("proxy: bad message length")
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}
