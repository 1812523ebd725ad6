package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/nodeboot"
)

var (
	flavors = []string{"m1.small", "m1.medium", "m1.large"}
	zones   = []string{"az-1", "az-2"}
)

// run is the demo inside the lab; its status is the process's.
func run(ctx context.Context, o options, fwd *framework.Forward) int {
	start := time.Now()
	out := newPrinter(start)
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	logPath := filepath.Join(o.dir, "demo.log")
	restoreStderr, err := redirectStderr(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 2
	}
	defer restoreStderr()

	d := &demo{opts: o, out: out, start: start, fwd: fwd}
	code := d.run(ctx)
	d.teardown()
	if code != 0 {
		out.say("demo failed; component logs: %s", logPath)
	}
	return code
}

type demo struct {
	opts  options
	out   *printer
	start time.Time
	fwd   *framework.Forward

	cloud     *framework.SimCloud
	stopCloud func()
	cp        *framework.ControlPlane
	sw        *framework.Stackward
	nodes     []*framework.Node
	tracker   *tracker
}

func (d *demo) run(ctx context.Context) int {
	o := d.opts
	var err error
	d.cloud, d.stopCloud, err = framework.NewSimCloud(framework.SimCloudOptions{})
	if err != nil {
		return d.fail(ctx, err)
	}
	servers, err := d.createServers(o.nodes)
	if err != nil {
		return d.fail(ctx, err)
	}
	d.out.say("cloud: stackward-cloudsim at %s; project lab, %d flavors, %d AZs, network %s %s, floating network %s; %d servers",
		d.cloud.AuthURL, len(flavors), len(zones), framework.LabNetwork, framework.NodeNetwork, framework.FloatingNetwork, len(servers))

	d.out.say("control plane: starting etcd, kube-apiserver, kube-controller-manager (kubeadm phases over bootstrap/)")
	cpCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	d.cp, err = framework.StartControlPlane(cpCtx, os.Getenv("STACKWARD_TOOLS_DIR"))
	cancel()
	if err != nil {
		return d.fail(ctx, fmt.Errorf("control plane: %w", err))
	}
	d.out.say("control plane: ready at %s in %.1fs", d.cp.Server, d.cp.StartupTime.Seconds())

	labDir, err := os.MkdirTemp("", "stackward-demo-")
	if err != nil {
		return d.fail(ctx, err)
	}
	defer os.RemoveAll(labDir)
	cloudConf := filepath.Join(labDir, "cloud.conf")
	if err := d.cloud.WriteCloudConf(cloudConf, ""); err != nil {
		return d.fail(ctx, err)
	}
	d.sw, err = d.cp.StartStackward(ctx, framework.StackwardOptions{CloudConf: cloudConf, Dir: labDir})
	if err != nil {
		return d.fail(ctx, err)
	}
	d.out.say("stackward-ccm and stackward-approver: running as ServiceAccount %s/%s with the chart's RBAC", framework.ChartNamespace, framework.ChartRelease)

	d.tracker, err = startTracker(ctx, d.cp, d.out)
	if err != nil {
		return d.fail(ctx, err)
	}
	if err := d.joinNodes(ctx, servers); err != nil {
		return d.fail(ctx, err)
	}

	done := d.tracker.waitAllDone(ctx, o.timeout)
	if ctx.Err() != nil {
		d.out.say("interrupted")
		return 0
	}
	var lb *lbSummary
	services := d.serviceControllerPresent(ctx)
	if o.lb && services && d.tracker.nodesDone() {
		lb = d.loadBalancer(ctx, 90*time.Second)
	}
	if ctx.Err() != nil {
		d.out.say("interrupted")
		return 0
	}
	s := d.summary(ctx)
	s.LoadBalancer = lb
	kubeconfig, kerr := d.writeKubeconfig()
	if kerr != nil {
		d.out.say("kubeconfig: %v", kerr)
	}
	s.Kubeconfig, s.APIServer = kubeconfig, "https://"+d.fwd.HostAddr
	printSummary(d.out, s)
	if o.summaryJSON != "" {
		if err := writeJSON(o.summaryJSON, s); err != nil {
			d.out.say("summary: %v", err)
		}
	}
	if kerr == nil {
		d.printTryIt(kubeconfig, services, lb)
	}
	if !done {
		d.out.say("not settled within %s: see the summary", o.timeout)
	}
	if o.duration > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(o.duration):
		}
	} else {
		d.out.say("running until Ctrl-C")
		<-ctx.Done()
	}
	if !d.tracker.nodesDone() {
		return 1
	}
	return 0
}

// fail reports err, unless it is the user's Ctrl-C cutting a step short.
func (d *demo) fail(ctx context.Context, err error) int {
	if ctx.Err() != nil {
		d.out.say("interrupted")
		return 0
	}
	d.out.say("error: %v", err)
	return 1
}

// createServers makes n servers, flavors and zones mixed, every third with a
// floating IP.
func (d *demo) createServers(n int) ([]cloudsim.Server, error) {
	width := len(fmt.Sprint(n))
	width = max(width, 2)
	var out []cloudsim.Server
	for i := 1; i <= n; i++ {
		nic := cloudsim.NICSpec{Network: framework.LabNetwork, FixedIP: framework.NodeIP(i)}
		if i%3 == 0 {
			nic.FloatingNetwork = framework.FloatingNetwork
		}
		srv, err := d.cloud.Sim.CreateServer(cloudsim.ServerSpec{
			Name:   fmt.Sprintf("node-%0*d", width, i),
			Flavor: flavors[(i-1)%len(flavors)],
			AZ:     zones[(i-1)%len(zones)],
			NICs:   []cloudsim.NICSpec{nic},
		})
		if err != nil {
			return nil, fmt.Errorf("create server %d: %w", i, err)
		}
		out = append(out, srv)
	}
	return out, nil
}

// joinNodes does for each server what stackward-node does on a VM: read the
// metadata service from the node's own address, then start its kubelet with
// the provider ID and node IP derived from it.
func (d *demo) joinNodes(ctx context.Context, servers []cloudsim.Server) error {
	metadataURL := strings.TrimSuffix(d.cloud.AuthURL, "/v3")
	for i, srv := range servers {
		ip := framework.NodeIP(i + 1)
		if err := framework.AddAddress(ip); err != nil {
			return err
		}
		cfg := nodeboot.DefaultConfig()
		cfg.SearchOrder = []string{nodeboot.SourceMetadataService}
		cfg.MetadataURL = metadataURL
		cfg.MetadataSourceIP = ip
		cfg.Region = framework.LabRegion
		cfg.Print = true
		cfg.Attempts = 3
		s, err := nodeboot.Resolve(ctx, cfg)
		if err != nil {
			return fmt.Errorf("stackward-node for server %s: %w", srv.Name, err)
		}
		name := s.Instance.Meta.Name
		d.tracker.expect(nodeInfo{
			Name: name, ServerID: srv.ID, ProviderID: s.ProviderID, IP: s.NodeIP(),
			Flavor: srv.Flavor, AZ: srv.AZ, FloatingIP: floatingIP(srv),
		})
		n, err := d.cp.LaunchNode(framework.NodeOptions{Name: name, IP: s.NodeIP(), ProviderID: s.ProviderID})
		if err != nil {
			return fmt.Errorf("kubelet of %s: %w", name, err)
		}
		d.nodes = append(d.nodes, n)
		d.tracker.launched(name)
		d.out.event(name, "kubelet started: --provider-id=%s --node-ip=%s (from the metadata service)", s.ProviderID, s.NodeIP())
	}
	return nil
}

func floatingIP(srv cloudsim.Server) string {
	for _, a := range srv.Addresses {
		if a.Type == "floating" {
			return a.IP
		}
	}
	return ""
}

// writeKubeconfig copies the admin kubeconfig, pointed at the forward.
func (d *demo) writeKubeconfig() (string, error) {
	cfg, err := clientcmd.LoadFromFile(filepath.Join(framework.KubernetesDir, "super-admin.conf"))
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + d.fwd.HostAddr
	}
	path := filepath.Join(d.opts.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

func (d *demo) printTryIt(kubeconfig string, services bool, lb *lbSummary) {
	p := d.out
	p.plain("")
	p.plain("The cluster is yours (apiserver forwarded to https://%s, cluster-admin):", d.fwd.HostAddr)
	p.plain("  export KUBECONFIG=%s", kubeconfig)
	p.plain("  kubectl get nodes -o wide")
	p.plain("  kubectl get csr")
	p.plain("  kubectl get node %s -o yaml   # providerID, addresses, instance type, zone", d.tracker.firstName())
	p.plain("  go run ./cmd/stackward doctor   # the operator's diagnosis (the lab's cloud is not reachable from the host)")
	if services {
		if lb != nil && lb.Address != "" {
			p.plain("  kubectl get service -o wide   # %s has its address from Octavia (simulated)", lbService)
		}
		p.plain("  kubectl create service loadbalancer web --tcp=80:8080 && kubectl get service web -w")
		p.plain("  (the hollow kubelets run no containers: the load balancers get addresses, not traffic)")
	} else {
		p.plain("  LoadBalancer Services: not yet. stackward-ccm has no service controller (Octavia support has")
		p.plain("  not landed), so `kubectl expose ... --type=LoadBalancer` would stay <pending>.")
	}
	p.plain("Component logs: %s", filepath.Join(d.opts.dir, "demo.log"))
}

// serviceControllerPresent asks whether the chart lets stackward-ccm write
// Service status, which it grants once the service controller exists.
func (d *demo) serviceControllerPresent(ctx context.Context) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:" + framework.ChartNamespace + ":" + framework.ChartRelease,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "patch", Resource: "services", Subresource: "status",
		},
	}}
	res, err := d.cp.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	return err == nil && res.Status.Allowed
}

// teardown stops everything this process started, kubelets first (the
// cloud's VMs going away), then Stackward, the control plane and the cloud.
func (d *demo) teardown() {
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, n := range d.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Remove() }()
	}
	wg.Wait()
	if d.tracker != nil {
		d.tracker.stop()
	}
	if d.sw != nil {
		if err := d.sw.Stop(); err != nil {
			d.out.say("stop: %v", err)
		}
	}
	if d.cp != nil {
		d.cp.Stop()
	}
	if d.stopCloud != nil {
		d.stopCloud()
	}
	// The forward is gone with us; the log stays.
	_ = os.Remove(filepath.Join(d.opts.dir, "kubeconfig"))
	d.out.say("stopped %d kubelets, stackward, the control plane and the cloud in %.1fs", len(d.nodes), time.Since(t0).Seconds())
}

// redirectStderr sends this process's stderr (the components' logs) to a
// file so that stdout carries only the demo's progress; restore puts it back.
func redirectStderr(path string) (restore func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	saved, err := syscall.Dup(2)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Dup3(int(f.Fd()), 2, 0); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Dup3(saved, 2, 0)
		syscall.Close(saved)
		f.Close()
	}, nil
}
