package approver

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// sync decides one request and records the outcome. An error leaves the
// request pending and makes the caller retry it with backoff.
func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		c.issued.Delete(name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get CSR %s from cache: %w", name, err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.DeletionTimestamp != nil {
		return nil // not ours
	}
	_, signed := c.issued.Load(name)
	resign := c.opts.Signer != nil && awaitsOurSignature(csr) && !signed
	if !isPending(csr) && !resign {
		return nil // already decided: never touched twice
	}
	if _, done := c.written.Load(name); done && !resign {
		return nil // decided by us; the cache has not caught up yet
	}
	logger := klog.FromContext(ctx).WithValues("csr", name, "user", csr.Spec.Username)
	if node, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix); ok {
		logger = logger.WithValues("node", node)
	}
	ctx = klog.NewContext(ctx, logger)

	if limit := c.opts.MaxPendingPerNode; limit > 0 {
		if ok, pending := c.order.admits(csr.Spec.Username, name, limit); !ok {
			c.metrics.decisions.WithLabelValues(outcomeDeferred, reasonOverNodeCap).Inc()
			c.deferrals.log(logger, csr.Spec.Username, reasonOverNodeCap,
				"Leaving CSR pending: too many pending CSRs for this requestor; older ones are decided first",
				"pending", pending, "maxPendingPerNode", limit)
			return nil
		}
	}

	start := c.now()
	var d Decision
	if n, big := c.oversize.Load(oversizeKey(csr)); big && len(csr.Spec.Request) == 0 {
		// The cache dropped the body; its size alone decides.
		d, err = tooLarge(n.(int))
	} else {
		d, err = c.evaluator.Evaluate(ctx, csr)
	}
	if err != nil {
		c.metrics.observe(outcomeRequeued, reasonCouldNotCheck, c.now().Sub(start).Seconds())
		// One Event and one log line per outage, not per retry: a cloud
		// outage during a join burst must not flood the apiserver.
		if retries := c.queue.NumRequeues(name); retries == 0 {
			logger.Info("Could not decide CSR; leaving it pending and retrying with backoff", "err", err)
			c.events.fold(csr, corev1.EventTypeWarning, reasonCouldNotCheck,
				fmt.Sprintf("Left pending, will retry: could not verify the request: %v", err))
		} else {
			logger.V(2).Info("Still could not decide CSR", "err", err, "retries", retries)
		}
		return fmt.Errorf("decide CSR %s: %w", name, err)
	}

	evaluated := c.now()
	c.metrics.steps.WithLabelValues(stepEvaluate).Observe(evaluated.Sub(start).Seconds())
	var outcome string
	quiet := false // a recheck that found the same: logged at debug level
	if d.Verdict != Wait {
		c.waiting.Delete(name)
	}
	switch d.Verdict {
	case Wait:
		outcome = outcomeWaiting
		if last, seen := c.waiting.Swap(name, d.Message); !seen || last != d.Message {
			c.recorder.Event(csr, corev1.EventTypeWarning, d.Reason, "Left pending: "+d.Message)
		} else {
			quiet = true
		}
		c.queue.AddAfter(name, c.opts.WaitRecheck)
	case Approve:
		if ok, after := c.reserve(c.issuedBudget, csr.Spec.Username, resign); !ok {
			msg := fmt.Sprintf("%s was approved %d certificates within %s (--max-certificates-per-node); a kubelet needs one at a time. Left pending; looked at again in %s",
				csr.Spec.Username, c.opts.MaxIssuedPerNode, c.opts.NodeBudgetWindow, after.Round(time.Second))
			if last, seen := c.waiting.Swap(name, msg); !seen || last != msg {
				c.recorder.Event(csr, corev1.EventTypeWarning, reasonOverIssueBudget, "Left pending: "+msg)
			}
			c.metrics.decisions.WithLabelValues(outcomeDeferred, reasonOverIssueBudget).Inc()
			c.deferrals.log(logger, csr.Spec.Username, reasonOverIssueBudget,
				"Leaving CSR pending: the node's certificate budget is spent", "retryAfter", after)
			c.queue.AddAfter(name, after)
			return nil
		}
		outcome = outcomeApproved
		approved := csr
		if !resign {
			if approved, err = c.setCondition(ctx, csr, certificatesv1.CertificateApproved, d); err != nil {
				c.issuedBudget.release(csr.Spec.Username)
				return c.updateFailed(ctx, start, err)
			}
			c.events.fold(csr, corev1.EventTypeNormal, d.Reason, "Approved: "+d.Message)
		}
		c.reportWarnings(ctx, csr, d)
		if c.opts.Signer != nil && approved != nil {
			if err := c.sign(ctx, approved); err != nil {
				return c.updateFailed(ctx, start, err)
			}
		}
	case Deny:
		if c.opts.LeavePendingOnDeny {
			outcome = outcomeLeftPending
			c.dryRunPending.Store(name, struct{}{})
			c.order.remove(name) // no longer counts against the cap
			for _, next := range c.order.first(csr.Spec.Username, c.opts.MaxPendingPerNode) {
				c.queue.Add(next) // may have waited behind this one
			}
			c.recorder.Event(csr, corev1.EventTypeWarning, d.Reason, "Would deny (left pending by --leave-pending-on-deny): "+d.Message)
			break
		}
		if ok, after := c.reserve(c.denialBudget, csr.Spec.Username, resign); !ok {
			// No write and no Event: a node sending bad request after bad
			// request must not spend the apiserver budget approvals need.
			c.metrics.decisions.WithLabelValues(outcomeDeferred, reasonOverDenialBudget).Inc()
			c.deferrals.log(logger, csr.Spec.Username, reasonOverDenialBudget,
				"Leaving CSR pending: the node's denial budget is spent", "reason", d.Reason, "retryAfter", after)
			c.queue.AddAfter(name, after)
			return nil
		}
		outcome = outcomeDenied
		if resign {
			// Approved earlier, no longer verifiable: leave it unsigned.
			c.recorder.Event(csr, corev1.EventTypeWarning, d.Reason, "Approved earlier but not signed: "+d.Message)
			break
		}
		if _, err := c.setCondition(ctx, csr, certificatesv1.CertificateDenied, d); err != nil {
			c.denialBudget.release(csr.Spec.Username)
			return c.updateFailed(ctx, start, err)
		}
		c.recorder.Event(csr, corev1.EventTypeWarning, d.Reason, "Denied: "+d.Message)
	default:
		return nil // Ignore: not ours
	}
	end := c.now()
	if outcome == outcomeApproved || outcome == outcomeDenied {
		c.metrics.steps.WithLabelValues(stepRecord).Observe(end.Sub(evaluated).Seconds())
	}
	elapsed := end.Sub(start)
	c.metrics.observe(outcome, d.Reason, elapsed.Seconds())
	logger.V(logLevel(quiet)).Info("Decided CSR", "decision", outcome, "reason", d.Reason, "message", d.Message, "duration", elapsed)
	return nil
}

// setCondition writes the Approved or Denied condition through the
// approval subresource. A conflict is returned: the retry sees the newer
// object (and skips it if someone else decided meanwhile).
func (c *Controller) setCondition(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType, d Decision) (*certificatesv1.CertificateSigningRequest, error) {
	upd, err := c.forWrite(ctx, csr)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update approval of CSR %s to %s: %w", csr.Name, t, err)
	}
	now := metav1.NewTime(c.now())
	upd.Status.Conditions = append(upd.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:               t,
		Status:             corev1.ConditionTrue,
		Reason:             d.Reason,
		Message:            d.Message,
		LastUpdateTime:     now,
		LastTransitionTime: now,
	})
	got, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, upd, metav1.UpdateOptions{})
	c.metrics.writes.WithLabelValues("certificatesigningrequests/approval", "update").Inc()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update approval of CSR %s to %s: %w", csr.Name, t, err)
	}
	c.written.Store(csr.Name, struct{}{})
	return got, nil
}

// updateFailed accounts for a decision the apiserver did not take (a
// conflict, a timeout); the retry decides again from fresh state.
func (c *Controller) updateFailed(ctx context.Context, start time.Time, err error) error {
	c.metrics.observe(outcomeRequeued, reasonUpdateFailed, c.now().Sub(start).Seconds())
	klog.FromContext(ctx).Info("Could not record the decision; retrying", "err", err)
	return err
}

// reportWarnings logs and records each misconfiguration a decision found
// once per process (every later request of that node would repeat it).
func (c *Controller) reportWarnings(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, d Decision) {
	for _, w := range d.Warnings {
		if _, seen := c.reported.LoadOrStore(w.Message, struct{}{}); seen {
			continue
		}
		klog.FromContext(ctx).Info("Misconfiguration", "reason", w.Reason, "message", w.Message)
		c.recorder.Event(csr, corev1.EventTypeWarning, w.Reason, w.Message)
	}
}

func logLevel(quiet bool) int {
	if quiet {
		return 4
	}
	return 0
}

// reserve takes one of the node's budget unless exempt (a request approved
// earlier that only needs its certificate, or is left unsigned).
func (c *Controller) reserve(b *nodeBudget, user string, exempt bool) (bool, time.Duration) {
	if exempt {
		return true, 0
	}
	return b.reserve(user)
}
