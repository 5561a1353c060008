package faultproxy_test

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/holdfast/holdfast/internal/faultproxy"
)

// echo starts a TCP server that echoes each line back, stopped when t ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through c and reports whether it came back.
func roundTrip(c net.Conn) bool {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

// pipe is a Relay that copies both ways; a line "cut\n" from the client
// makes it cut instead of passing it on.
func pipe(p *faultproxy.Proxy) faultproxy.Relay {
	return func(client, server net.Conn) {
		go func() { _, _ = io.Copy(client, server) }()
		r := bufio.NewReader(client)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if line == "cut\n" && p.TakeArmed() {
				p.Cutoff(client, server)
				return
			}
			if _, err := server.Write([]byte(line)); err != nil {
				return
			}
		}
	}
}

func TestCutRefuseSever(t *testing.T) {
	p := faultproxy.Start(t, echo(t), pipe)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c := dial()
	if !roundTrip(c) {
		t.Fatal("no round trip through the proxy")
	}
	// Not armed: "cut" passes through like any line.
	if _, err := c.Write([]byte("cut\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "cut\n" {
		t.Fatalf("unarmed cut: %q %v", line, err)
	}

	// Armed, refusing after the cut: the connection is closed, Cut counts
	// it, and new connections are refused until Refusing is cleared.
	p.CutNext(1)
	p.RefuseAfterCut.Store(true)
	if _, err := c.Write([]byte("cut\n")); err != nil {
		t.Fatal(err)
	}
	if roundTrip(c) {
		t.Fatal("the cut connection still answers")
	}
	if got := p.Cut.Load(); got != 1 {
		t.Fatalf("Cut = %d, want 1", got)
	}
	if roundTrip(dial()) {
		t.Fatal("a new connection answered while refusing")
	}
	p.RefuseAfterCut.Store(false)
	p.Refusing.Store(false)
	c2 := dial()
	if !roundTrip(c2) {
		t.Fatal("no round trip after refusing stopped")
	}

	// SeverAll closes the open connection and counts it.
	if n := p.SeverAll(); n != 1 {
		t.Fatalf("SeverAll = %d, want 1", n)
	}
	if roundTrip(c2) {
		t.Fatal("a severed connection still answers")
	}
	if p.TakeArmed() {
		t.Fatal("TakeArmed after the only armed cut was used")
	}
}
