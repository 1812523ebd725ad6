//go:build e2e

package kubeadm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/stackward/stackward/e2e/framework"
	"github.com/stackward/stackward/pkg/approver"
	"github.com/stackward/stackward/pkg/pki"
)

// TestRotatingTheServingCAKeepsKubeletsReachable rotates the
// kubelet-serving CA as bootstrap/README.md says, with the approver as the
// signer (its CA in a directory, as the chart mounts the Secret), and
// checks after every step that the apiserver still reaches every kubelet
// over verified TLS (the path of kubectl logs, exec and port-forward),
// while pod logs are read and exec is asked through the apiserver on every
// node all along (see framework.LogProber for what an exec on a hollow
// kubelet can show).
// It replaces the package's shared control plane with one whose
// kube-controller-manager does not sign serving certificates, so it runs
// last (files and tests run in order).
func TestRotatingTheServingCAKeepsKubeletsReachable(t *testing.T) {
	cp := framework.ReplaceSharedControlPlane(t, framework.ControlPlaneOptions{ApproverSigns: true})
	cloud := framework.StartSimCloud(t, framework.SimCloudOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conf := cloud.CloudConf(t, "")
	pkiDir := filepath.Join(framework.KubernetesDir, "pki")
	signerDir := t.TempDir() // the chart's Secret volume
	writeCA := func(certPath, keyPath string) {
		t.Helper()
		for src, dst := range map[string]string{certPath: pki.CertFile, keyPath: pki.KeyFile} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(signerDir, dst), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeCA(filepath.Join(pkiDir, pki.CertFile), filepath.Join(pkiDir, pki.KeyFile))
	runSigner := func() func() {
		t.Helper()
		stop, err := cp.RunApproverWith(ctx, conf, approver.Options{}, func(c *approver.Config) { c.SignWithCADir = signerDir })
		if err != nil {
			t.Fatal(err)
		}
		return stop
	}

	names := []string{"rot-1", "rot-2"}
	var nodes []*framework.Node
	stop := runSigner()
	for i, name := range names {
		cloud.CreateServer(t, name, 50+i, "m1.small", "az-1")
		nodes = append(nodes, cp.StartNode(t, framework.NodeOptions{Name: name, IP: framework.NodeIP(50 + i)}))
	}
	for _, n := range nodes {
		if _, err := n.WaitForServingCertificate(ctx, cp.ServingCACert, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// The apiserver restarts below; the approver's lease would lapse, so it
	// runs only while it has work, as a restarted pod would.
	stop()
	reachable := func(step string) {
		t.Helper()
		for _, name := range names {
			var body []byte
			var lastErr error
			err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
				body, lastErr = cp.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + name + "/proxy/healthz").DoRaw(ctx)
				return lastErr == nil && string(body) == "ok", nil
			})
			if err != nil {
				t.Fatalf("%s: the apiserver does not reach kubelet %s: %v (%s)", step, name, lastErr, body)
			}
		}
	}
	reachable("before the rotation")
	prober := cp.StartLogProber(ctx, t, names)
	defer prober.Stop()
	setCAFlag := func(path string) {
		t.Helper()
		prober.PauseAPIServer()
		defer prober.ResumeAPIServer()
		if err := cp.SetAPIServerFlag(ctx, "kubelet-certificate-authority", path); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()

	res, err := pki.Rotate(pki.RotateOptions{Dir: pkiDir})
	if err != nil {
		t.Fatal(err)
	}
	setCAFlag(res.BundlePath)
	reachable("the apiserver trusts the bundle of both CAs")

	stop = runSigner()
	writeCA(res.NextCertPath, res.NextKeyPath) // the Secret updated: no restart
	for _, n := range nodes {
		// Renewing restarts the kubelet: its pod's logs are not probed
		// until it serves again; the other node's are.
		prober.PauseNode(n.Name)
		if err := n.RenewServingCertificate(); err != nil {
			t.Fatal(err)
		}
		if _, err := n.WaitForServingCertificate(ctx, res.Next.CertPEM, 90*time.Second); err != nil {
			t.Fatalf("%s did not get a certificate of the next CA from the running signer: %v", n.Name, err)
		}
		if err := prober.ResumeNode(ctx, n.Name); err != nil {
			t.Fatalf("after %s renewed: %v", n.Name, err)
		}
		reachable("after " + n.Name + " renewed")
	}
	stop()

	fin, err := pki.Finish(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	setCAFlag(filepath.Join(pkiDir, pki.CertFile))
	reachable("the old CA dropped")
	ok, errs := prober.Stop()
	for _, e := range errs {
		t.Errorf("during the rotation: %s", e)
	}
	for _, name := range names {
		if ok[name] == 0 {
			t.Errorf("no logs or exec of the pod on %s got through during the rotation", name)
		}
	}
	t.Logf("pod logs and exec through the apiserver during the rotation: %v rounds, %d failures", ok, len(errs))
	t.Logf("rotation of the kubelet-serving CA, %d kubelets, end to end (two apiserver restarts): %v", len(nodes), time.Since(start).Round(time.Second))
	for _, n := range nodes {
		if _, err := n.ServingCertificate(ctx, cp.ServingCACert); err == nil {
			t.Errorf("%s still serves a certificate of the old CA", n.Name)
		}
	}

	// The probes can fail: trusting the old CA alone, the apiserver must
	// refuse every kubelet, for logs and exec alike.
	setCAFlag(fin.OldCertPath)
	for _, name := range names {
		logsErr, execErr := prober.Check(ctx, name)
		if logsErr == nil || execErr == nil {
			t.Errorf("with only the old CA trusted, logs (err %v) and exec (err %v) of the pod on %s got through", logsErr, execErr, name)
		} else {
			t.Logf("with only the old CA trusted, %s: logs: %v; exec: %v", name, logsErr, execErr)
		}
	}
}
