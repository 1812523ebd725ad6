package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// LogProber asks the apiserver for the logs of one pod per node, and to
// exec in it, over and over, and records every failure: `kubectl logs` and
// `kubectl exec` are the apiserver dialing the kubelet's port 10250 and
// verifying its serving certificate with --kubelet-certificate-authority,
// the path a CA rotation must not break. The hollow kubelet's fake runtime
// grants no exec stream (its CRI Exec returns no URL), so an exec counts
// when the kubelet's own answer comes back: its CRI client's "URL is not
// set", which only a request that crossed the verified TLS hop and the
// kubelet's authorization to the runtime can get.
// A node's probe can be paused while its kubelet restarts, and all of them
// while the apiserver restarts: neither is the certificate's doing.
type LogProber struct {
	cp *ControlPlane
	// inFlight[node] is held for the length of a request, so a pause can
	// wait for the one under way; no lock is held across a pause, so a
	// failed test still stops cleanly.
	inFlight map[string]*sync.Mutex
	pods     map[string]string
	mu       sync.Mutex
	paused   map[string]bool // a node's name, or "" for all
	ok       map[string]int
	errs     []string
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopped  bool
}

// LogProbePodPrefix names the probe's pods: <prefix><node>.
const LogProbePodPrefix = "logs-"

// StartLogProber puts a pod on each node (bound directly, as the lab runs
// no scheduler), waits until its logs can be read through the apiserver,
// then probes every node's pod continuously until Stop.
func (cp *ControlPlane) StartLogProber(ctx context.Context, t testing.TB, nodes []string) *LogProber {
	t.Helper()
	p := &LogProber{cp: cp, inFlight: map[string]*sync.Mutex{}, pods: map[string]string{}, paused: map[string]bool{}, ok: map[string]int{}}
	if err := cp.WaitDefaultServiceAccount(ctx, "default"); err != nil {
		t.Fatalf("the log probe's pods: %v", err)
	}
	for _, node := range nodes {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: LogProbePodPrefix + node, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:    node,
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "app", Image: "app"}},
			},
		}
		if _, err := cp.Admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the log probe's pod on %s: %v", node, err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
		p.pods[node] = pod.Name
		p.inFlight[node] = &sync.Mutex{}
	}
	for _, node := range nodes {
		if err := p.waitLogs(ctx, node, 90*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	for _, node := range nodes {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_ = wait.PollUntilContextCancel(runCtx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				p.probe(ctx, node)
				return false, nil
			})
		}()
	}
	return p
}

func (p *LogProber) probe(ctx context.Context, node string) {
	p.inFlight[node].Lock()
	defer p.inFlight[node].Unlock()
	p.mu.Lock()
	paused := p.paused[node] || p.paused[""]
	p.mu.Unlock()
	if paused || ctx.Err() != nil {
		return
	}
	err := p.logs(ctx, node)
	if err == nil {
		err = p.exec(ctx, node)
	}
	if ctx.Err() != nil {
		return // stopped mid-request
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("%s: pod %s on node %s: %v", time.Now().Format(time.StampMilli), p.pods[node], node, err))
		return
	}
	p.ok[node]++
}

func (p *LogProber) logs(ctx context.Context, node string) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := p.cp.Admin.CoreV1().Pods("default").GetLogs(p.pods[node], &corev1.PodLogOptions{Container: "app"}).DoRaw(rctx)
	return err
}

// KubeletExecAnswer is what the hollow kubelet answers an exec with: its
// fake runtime returns no streaming URL.
const KubeletExecAnswer = "URL is not set"

func (p *LogProber) exec(ctx context.Context, node string) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := p.cp.Exec(rctx, "default", p.pods[node], "app", "true")
	if err != nil {
		return err
	}
	if r.Status != http.StatusInternalServerError || strings.TrimSpace(r.Body) != KubeletExecAnswer {
		return fmt.Errorf("exec: HTTP %d %q, want the kubelet's own answer %q", r.Status, r.Body, KubeletExecAnswer)
	}
	return nil
}

// waitLogs waits until the node's pod is running, its logs are served and
// an exec reaches the kubelet.
func (p *LogProber) waitLogs(ctx context.Context, node string, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pod, err := p.cp.Admin.CoreV1().Pods("default").Get(ctx, p.pods[node], metav1.GetOptions{})
		if err != nil || pod.Status.Phase != corev1.PodRunning {
			lastErr = fmt.Errorf("pod not running yet (err %w)", err)
			return false, nil
		}
		if lastErr = p.logs(ctx, node); lastErr == nil {
			lastErr = p.exec(ctx, node)
		}
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("logs of pod %s on node %s through the apiserver: %w (last: %w)", p.pods[node], node, err, lastErr)
	}
	return nil
}

// Check asks once for the logs of node's pod and to exec in it.
func (p *LogProber) Check(ctx context.Context, node string) (logsErr, execErr error) {
	return p.logs(ctx, node), p.exec(ctx, node)
}

// PauseNode stops probing node (after its request in flight) until
// ResumeNode, e.g. while its kubelet restarts.
func (p *LogProber) PauseNode(node string) { p.pause(node) }

// ResumeNode waits until the restarted kubelet serves the pod's logs again
// (it re-creates the pod's containers first), then probes it again.
func (p *LogProber) ResumeNode(ctx context.Context, node string) error {
	if err := p.waitLogs(ctx, node, 90*time.Second); err != nil {
		return err
	}
	p.resume(node)
	return nil
}

// PauseAPIServer stops all probes (after their requests in flight) while
// the apiserver restarts; ResumeAPIServer lets them go on.
func (p *LogProber) PauseAPIServer()  { p.pause("") }
func (p *LogProber) ResumeAPIServer() { p.resume("") }

func (p *LogProber) pause(key string) {
	p.mu.Lock()
	p.paused[key] = true
	p.mu.Unlock()
	for node, m := range p.inFlight {
		if key == "" || key == node {
			m.Lock()
			m.Unlock() //nolint:staticcheck // waits for the request in flight
		}
	}
}

func (p *LogProber) resume(key string) {
	p.mu.Lock()
	delete(p.paused, key)
	p.mu.Unlock()
}

// Stop ends the probes and returns how many requests succeeded per node
// and every failure.
func (p *LogProber) Stop() (ok map[string]int, errs []string) {
	if !p.stopped {
		p.stopped = true
		p.cancel()
		p.wg.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.errs
}
