// Package framework runs Stackward's end-to-end lab: a real etcd,
// kube-apiserver and kube-controller-manager started from kubeadm-generated
// PKI and flags, and hollow kubelets (the real kubelet code over a fake
// runtime) that TLS-bootstrap like real nodes.
//
// Everything runs inside a private network namespace that the test binary
// re-executes itself into (see Main). Its loopback carries the lab's
// addresses: the control plane on ControlPlaneIP and one 198.18.x.y address
// per node, so each kubelet serves its certificate on an address of its own
// and nothing can reach, or be reached from, outside the namespace.
//
// # The two clouds
//
// A scenario talks to OpenStack through one of two clouds, and each idea has
// one name:
//
//   - SimCloud is stackward-cloudsim, the OpenStack simulator, serving in
//     the lab on CloudIP (StartSimCloud, NewSimCloud, SimCloudOptions). It
//     has the simulator-only powers: faults, latency, direct state changes
//     through its Sim.
//   - RealCloud is real OpenStack services (Keystone, Nova, Neutron,
//     Octavia from the Debian packages) brought up in the lab
//     (StartRealCloud, SharedRealCloud, OpenRealCloud).
//   - TestCloud is what a backend-neutral scenario may ask of either:
//     *RealCloud implements it, and SimCloud.TestCloud returns SimTestCloud,
//     the simulator seen through it. PortForger and Trunker are two more
//     such capabilities both clouds have.
//   - Backend is one entry of Backends: a TestCloud and the first NodeIP
//     index a scenario may use on it, so that runs on the two clouds never
//     share an address. A scenario written once runs as a subtest per
//     Backend.
//   - CloudAPI is a test's own gophercloud client of either cloud, to check
//     what the CCM did (routes, ports, load balancer trees).
//
// # Files
//
//   - lab.go: the network namespace (Main, RunInLab, InLab), lab addresses
//     (NodeIP, NodeIPv6, AddAddress).
//   - controlplane.go: etcd, kube-apiserver and kube-controller-manager from
//     kubeadm-generated PKI (ControlPlane, SharedControlPlane);
//     ha.go: several control-plane hosts; restart.go, rotate.go: restarting
//     the apiserver, changing its flags, renewing serving certificates;
//     controlplanenode.go: a control-plane host made a node (its server in
//     the cloud, its hollow kubelet), as kubeadm init does.
//   - node.go: hollow kubelets (Node, StartNode); binder.go: the lab's
//     stand-in for kube-scheduler; pod.go, podidentity.go, exec.go: pods run
//     as processes with their ServiceAccount's identity, exec into them;
//     podvolume.go: the files of a pod's Secret, ConfigMap and projected
//     volumes;
//     logprobe.go: kubectl logs and exec through the apiserver to every
//     kubelet, over and over, recording failures (CA rotations).
//   - components.go, stackward.go: stackward-ccm and stackward-approver run
//     in-process (RunCCM, RunApprover, StartStackward); identity.go: the
//     chart rendered and its RBAC applied, as an install would.
//   - upstreamccm.go: the upstream OpenStack CCM binary, for takeover tests;
//     metricsserver.go: metrics-server's binary and manifests.
//   - cloud.go: SimCloud and the lab's seed (LabSeed); testcloud.go:
//     TestCloud, TestServer and SimTestCloud; backends.go: Backend, Backends,
//     SharedRealCloud and helpers shared by scenarios on both clouds.
//   - realcloud.go, realcloud_open.go, realcloud_servers.go: RealCloud:
//     bringing it up, connecting to one already running (make realcloud),
//     its TestCloud methods; realcloud_faults.go, realcloud_health.go,
//     realcloud_db.go, realcloud_octavialog.go: faults injected into its
//     services, waiting until they answer again, what an admin does at its
//     database, the requests octavia-api served.
//   - faults.go: Fault, a failure of one service for a while; health.go:
//     HealthCheck and WaitHealthy.
//   - cloudapi.go: CloudAPI; recorder.go: what the cloud really answered
//     behind pkg/openstack's adapters (every exchange of a client); forgedport.go, trunk.go: PortForger and Trunker on
//     both clouds; othercluster.go: another cluster's resources on the same
//     cloud; vip.go: a TCP VIP in front of several apiservers.
//   - forward.go: a host port relayed into the lab (RunInLabWithForward).
//   - service.go, csr.go: Services of type LoadBalancer and CSRs as tests
//     wait for them; process.go: tool binaries and processes; util.go:
//     RepoRoot.
package framework
