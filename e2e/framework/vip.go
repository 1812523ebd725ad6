package framework

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// VIP is the lab's load balancer in front of the apiservers: a TCP
// forwarder on one address that no host owns, relaying each connection to
// the first backend that accepts it (trying them in turn from a rotating
// start), as an L4 load balancer with a connect health check does. A host
// that went away refuses connections and is passed over.
type VIP struct {
	Addr string

	ln       net.Listener
	mu       sync.Mutex
	backends []string
	next     int
	wg       sync.WaitGroup
}

// StartVIP listens on addr (ip:port, the ip put on the lab's loopback).
// It relays to no one until AddBackend.
func StartVIP(addr string) (*VIP, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("vip %s: %w", addr, err)
	}
	if err := AddAddress(host); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("vip: listen on %s: %w", addr, err)
	}
	v := &VIP{Addr: addr, ln: ln}
	v.wg.Add(1)
	go v.serve()
	return v, nil
}

// AddBackend puts a ready apiserver (ip:port) behind the VIP.
func (v *VIP) AddBackend(addr string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.backends = append(v.backends, addr)
}

func (v *VIP) serve() {
	defer v.wg.Done()
	for {
		conn, err := v.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			backend := v.dial()
			if backend == nil {
				return // the client sees the connection closed, as with no healthy member
			}
			pipe(conn, backend)
		}()
	}
}

// dial tries every backend once, starting one further each time.
func (v *VIP) dial() net.Conn {
	v.mu.Lock()
	backends := append([]string(nil), v.backends...)
	start := v.next
	v.next++
	v.mu.Unlock()
	for i := range backends {
		b := backends[(start+i)%len(backends)]
		conn, err := net.DialTimeout("tcp", b, 2*time.Second)
		if err == nil {
			return conn
		}
	}
	return nil
}

// Stop closes the listener (relayed connections end with their peers).
func (v *VIP) Stop() {
	_ = v.ln.Close()
	v.wg.Wait()
}
