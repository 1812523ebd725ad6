package openstack

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestOnlyOperationsDeclaredSafeAreRetried(t *testing.T) {
	tests := []struct {
		name         string
		service, op  string
		wantAttempts int
	}{
		{name: "a read is retried through two 503s", service: ServiceNetwork, op: "list_ports", wantAttempts: 3},
		{name: "a compare-and-swap port update is retried", service: ServiceNetwork, op: "update_port", wantAttempts: 3},
		{name: "a load balancer create is tried once: it may have happened", service: ServiceLoadBalancer, op: "create_loadbalancer", wantAttempts: 1},
		{name: "a floating IP create is tried once", service: ServiceNetwork, op: "create_floatingip", wantAttempts: 1},
		{name: "a security group create is tried once", service: ServiceNetwork, op: "create_security_group", wantAttempts: 1},
		{name: "an undeclared operation is tried once", service: ServiceNetwork, op: "create_something_new", wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := testCaller(t, RetryPolicy{MaxAttempts: 5})
			attempts := 0
			err := c.Do(context.Background(), tt.service, tt.op, func(context.Context) error {
				attempts++
				if attempts <= 2 {
					return httpError(503, "")
				}
				return nil
			})
			if attempts != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", attempts, tt.wantAttempts)
			}
			if (err == nil) != (tt.wantAttempts == 3) {
				t.Errorf("err = %v after %d attempts", err, attempts)
			}
		})
	}
}

// TestEveryOperationDeclaresItsRetryPolicy reads the adapters' source: an
// operation a call site names but operations.go does not declare would be
// tried once silently, which is safe but is a decision nobody made.
func TestEveryOperationDeclaresItsRetryPolicy(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// c.Do(ctx, ServiceX, "op", ...) and listAll(ctx, n.caller, ServiceX,
	// "op", ...) name their service; the per-adapter
	// helpers n.do(ctx, "op", ...) and o.do(...) imply theirs.
	direct := regexp.MustCompile(`(?:\.Do|\blistAll)\(ctx, (?:\w+\.caller, )?(Service\w+), "(\w+)"`)
	helper := regexp.MustCompile(`\b([no])\.(?:do|listFloatingIPs)\(ctx, "(\w+)"`)
	services := map[string]string{"ServiceIdentity": ServiceIdentity, "ServiceCompute": ServiceCompute,
		"ServiceNetwork": ServiceNetwork, "ServiceLoadBalancer": ServiceLoadBalancer, "n": ServiceNetwork, "o": ServiceLoadBalancer}
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{direct, helper} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				seen++
				service := services[m[1]]
				if _, ok := retrySafe[service][m[2]]; !ok {
					t.Errorf("%s: operation %s/%s is not declared in operations.go", f, service, m[2])
				}
			}
		}
	}
	if seen < 45 {
		t.Fatalf("found only %d call sites; the patterns no longer match the adapters", seen)
	}
}
