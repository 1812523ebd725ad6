package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A kubelet writes its Node's providerID itself; the CCM must not give a
// node another server's addresses, zone or routes, nor delete it on the
// strength of another server's state.
func TestNodeNameBinding(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		node      string
		suffixes  []string
		wantErr   bool
		wantEvent string
	}{
		{name: "the server's own name is initialized", node: "web-1"},
		{name: "case folding is allowed", node: "WEB-1"},
		{name: "a node named after another server is not initialized and gets an Event", node: "web-7",
			wantErr: true, wantEvent: "Warning InstanceNameMismatch node \"web-7\" has providerID"},
		{name: "a FQDN node name needs the suffix configured", node: "web-1.nodes.example.com",
			wantErr: true, wantEvent: "Warning InstanceNameMismatch"},
		{name: "with the suffix configured the FQDN node name is the server's", node: "web-1.nodes.example.com",
			suffixes: []string{".Nodes.Example.com."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, rec := newTestCloud(t, newFakeCompute(testServers()...), Options{DNSSuffixes: tt.suffixes})
			node := newNode(tt.node, "openstack:///"+web1ID, false)
			md, err := i.InstanceMetadata(ctx, node)
			if (err != nil) != tt.wantErr {
				t.Fatalf("InstanceMetadata = %+v, %v; want error %v", md, err, tt.wantErr)
			}
			got := strings.Join(events(rec), "\n")
			if tt.wantEvent == "" && got != "" || !strings.Contains(got, tt.wantEvent) {
				t.Errorf("events %q, want %q", got, tt.wantEvent)
			}
			if !tt.wantErr {
				return
			}
			if !errors.Is(err, ErrNameMismatch) {
				t.Errorf("err %v, want ErrNameMismatch", err)
			}
			// Not "gone": the lifecycle controller must not delete it.
			if exists, err := i.InstanceExists(ctx, node); err == nil {
				t.Errorf("InstanceExists = %v, nil; want an error", exists)
			}
		})
	}
}
