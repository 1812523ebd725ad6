// Package approver decides kubelet serving certificate requests (signer
// kubernetes.io/kubelet-serving) by asking the cloud, not the Node.
//
// Nothing in Kubernetes approves serving CSRs, and the Node object is partly
// written by the kubelet itself, so it cannot vouch for the names a kubelet
// asks for. This package approves a request only when every IP SAN is an
// address the cloud itself controls for the requesting node's instance (a
// fixed IP of one of its ports in the cluster's project, or a floating IP on
// one; never a user-set accessIPv4, the Service CIDR or the control-plane
// endpoint), decided by nodeaddress.Trusted as a subset of what the CCM
// publishes, and every DNS SAN is one of that instance's names. A request
// of an instance that cannot be running (SHUTOFF and the like) waits.
//
// A decision is a value: an ordered list of small named checks each return
// Approve, Deny, Wait or Continue with a reason. An error means "could not decide":
// the request stays pending and is retried with backoff. The rule is "deny
// only on certainty, never approve on doubt": a cloud or apiserver failure
// never becomes a denial, and only a definitive answer (the cloud says the
// instance does not exist, a SAN is not the instance's) does.
//
// Join bursts: requests that wait for the cloud together are answered by
// bulk requests sized by the batch, not the project (the servers of the
// names they may bind to, the project's ports of those servers, and the
// floating IPs on those ports when asked for), started after all of them
// were asked (a lone request costs one targeted lookup), so no decision
// rests on cloud data older than its request, and a burst of N requests
// costs a few bulk requests rather than N lookups. Each decision is one apiserver write; Events of
// identical approvals are folded into one per window, denials always get
// their own.
package approver
