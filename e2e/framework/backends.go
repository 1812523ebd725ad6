package framework

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The real cloud of a package whose scenarios run on both backends: brought
// up by the first test that needs it (a run of only a package's harness tests
// starts none) and stopped when the test binary ends (RunInLab). Each such
// package has its own, in its own lab namespace, so packages run side by side.
var (
	realCloudOnce sync.Once
	realCloud     *RealCloud
	realCloudErr  error
	stopRealCloud func()
)

// SharedRealCloud returns the package's real cloud, bringing it up on first use.
func SharedRealCloud(t testing.TB) *RealCloud {
	t.Helper()
	realCloudOnce.Do(func() {
		var stop func()
		realCloud, stop, realCloudErr = NewRealCloud()
		if realCloudErr == nil {
			stopRealCloud = stop
			fmt.Fprintf(os.Stderr, "real cloud up in %s (state and logs in %s)\n", realCloud.StartupTime.Round(1e9), realCloud.Dir)
		}
	})
	if realCloudErr != nil {
		t.Fatal(realCloudErr)
	}
	return realCloud
}

// Backend is one cloud a scenario runs against, and the first node index
// (NodeIP) it may use, so scenarios on the two clouds never share an address.
type Backend struct {
	Cloud     TestCloud
	FirstNode int
}

// Backends returns the simulator (started for the test) and the package's
// real cloud, in that order: a scenario runs as a subtest on each.
func Backends(t *testing.T) []Backend {
	t.Helper()
	return []Backend{
		{Cloud: StartSimCloud(t, SimCloudOptions{}).TestCloud(), FirstNode: 1},
		{Cloud: SharedRealCloud(t), FirstNode: 101},
	}
}

// NodePort returns the one Neutron port holding ip, failing the test
// otherwise.
func (a *CloudAPI) NodePort(ctx context.Context, t testing.TB, ip string) ports.Port {
	t.Helper()
	ps, err := a.Ports(ctx, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: ip}}})
	if err != nil || len(ps) != 1 {
		t.Fatalf("port of %s: %v %v", ip, ps, err)
	}
	return ps[0]
}

// DeleteNodeAtEnd deletes the Node when the test ends, after its kubelet
// stopped (cleanups run last-in first-out): later tests on the shared
// control plane must not see it, e.g. as a load balancer member.
func (cp *ControlPlane) DeleteNodeAtEnd(t testing.TB, name string) {
	t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// UninitializedTaint is the taint a kubelet with --cloud-provider=external
// registers its Node with and the CCM removes once it initialized it.
const UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// JoinCloudNode boots a server with NodeIP(idx) in cloud and starts its
// hollow kubelet; the Node is deleted when the test ends.
func (cp *ControlPlane) JoinCloudNode(t testing.TB, cloud TestCloud, name string, idx int) *Node {
	t.Helper()
	cloud.CreateServer(t, name, idx, "m1.small", "az-1")
	cp.DeleteNodeAtEnd(t, name)
	return cp.StartNode(t, NodeOptions{Name: name, IP: NodeIP(idx)})
}

// WaitInitialized waits until the CCM has initialized the Node.
func (cp *ControlPlane) WaitInitialized(ctx context.Context, t testing.TB, name string) {
	t.Helper()
	if _, err := cp.WaitForNode(ctx, name, 3*time.Minute, func(n *corev1.Node) bool {
		return n.Spec.ProviderID != "" && !HasTaint(n, UninitializedTaint)
	}); err != nil {
		t.Fatalf("node %s not initialized: %v", name, err)
	}
}

// DeleteServices deletes every Service in ns and waits until the CCM has
// removed their finalizers (their load balancers are gone then).
func (cp *ControlPlane) DeleteServices(t testing.TB, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("list Services in %s: %v", ns, err)
		return
	}
	for _, s := range list.Items {
		if err := cp.Admin.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Service %s/%s: %v", ns, s.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("Services in %s kept their finalizers: %v", ns, err)
	}
}

// LoadBalancersNamed lists the load balancers called name, failing the test
// on an error.
func (a *CloudAPI) LoadBalancersNamed(ctx context.Context, t testing.TB, name string) []loadbalancers.LoadBalancer {
	t.Helper()
	pages, err := loadbalancers.List(a.Octavia, loadbalancers.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		t.Fatalf("list load balancers: %v", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(pages)
	if err != nil {
		t.Fatal(err)
	}
	return lbs
}
