package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// TestServesTheDemo: the command serves the demo at /mcp on DEMO_ADDR,
// its tools list as a client sees it, and it stops cleanly when told to.
func TestServesTheDemo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("DEMO_ADDR", addr)
	t.Setenv("DEMO_SECRET", "a secret shared by the demo's replicas")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()

	mc := mcpclient.New(mcpclient.Options{RequestTimeout: 5 * time.Second})
	srv := mcpclient.Server{URL: "http://" + addr + "/mcp"}
	var names []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		tools, err := mc.ListTools(t.Context(), srv)
		if err == nil {
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo never answered at %s: %v", srv.URL, err)
		}
	}
	found := false
	for _, n := range names {
		found = found || n == "book_flight"
	}
	if !found {
		t.Errorf("the demo lists %v, without book_flight", names)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopping: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the command did not stop")
	}
}
