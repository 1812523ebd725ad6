// Package pki creates and uses the dedicated kubelet-serving CA.
//
// Kubelet serving certificates must not come from the cluster CA: every
// pod (kube-root-ca.crt) and every kubelet verifies the apiserver with the
// cluster CA, so a serving certificate it signs for 10.96.0.1 or the
// control-plane endpoint would be a valid apiserver certificate. A separate
// CA, trusted only by the apiserver's --kubelet-certificate-authority, keeps
// a kubelet's certificate useful for exactly one thing: the apiserver
// talking to that kubelet.
//
// The CA is made with cfssl's initca (ECDSA P-256 or RSA 3072, path length
// 0). Only cfssl's initca, csr, config, signer/local and helpers packages are
// used: its certdb pulls in cgo SQLite.
package pki
