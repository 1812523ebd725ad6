// Package approver decides kubelet serving certificate requests (signer
// kubernetes.io/kubelet-serving) by asking the cloud, not the Node.
//
// Nothing in Kubernetes approves serving CSRs, and the Node object is partly
// written by the kubelet itself, so it cannot vouch for the names a kubelet
// asks for. This package approves a request only when every IP SAN is an
// address the cloud reports for the requesting node's instance (computed by
// the same nodeaddress package the CCM publishes with, so the two never
// drift) and every DNS SAN is one of that instance's names.
//
// A decision is a value: an ordered list of small named checks each return
// Approve, Deny or Continue with a reason. An error means "could not decide":
// the request stays pending and is retried with backoff. The rule is "deny
// only on certainty, never approve on doubt": a cloud or apiserver failure
// never becomes a denial, and only a definitive answer (the cloud says the
// instance does not exist, a SAN is not the instance's) does.
//
// Join bursts: requests that wait for the cloud together are answered by
// one listing of the project started after all of them were asked (a lone
// request costs one targeted lookup), so no decision rests on cloud data
// older than its request, and a burst of N requests costs a few listings
// rather than N calls. Each decision is one apiserver write; Events of
// identical approvals are folded into one per window, denials always get
// their own.
package approver
