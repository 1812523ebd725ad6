// Package nodeboot turns what OpenStack tells a virtual machine about itself
// into the node-specific kubelet settings of a cluster whose cloud provider is
// external: --provider-id, --node-ip and --cloud-provider=external.
//
// It exists because with --cloud-provider=external the kubelet no longer asks
// the cloud who it is. If the kubelet guesses its node IP (the first address
// of the default-route interface) or has no provider ID, the Node it
// registers may carry an address the cloud does not attribute to the server,
// and stackward-approver will (rightly) refuse its serving certificate. The
// only trustworthy sources on the node are the Nova metadata service and the
// config drive, so this package reads them, cross-checks them, picks the node
// IP from network_data.json by explicit rules, and writes the result as a
// kubelet systemd drop-in, a kubeadm kubeletconfiguration patch and
// (optionally) a complete kubeadm JoinConfiguration. It refuses, naming the
// field and the source, rather than writing a guess.
package nodeboot
