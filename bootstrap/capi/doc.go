// Package capi holds the tests of the Cluster API files in this directory:
// the KubeadmControlPlane and KubeadmConfigTemplate patches for
// cluster-api-provider-openstack clusters, the HelmChartProxy and the
// ClusterResourceSet. They decode strictly with Cluster API's published
// v1beta2 types, the kubeadm configuration they produce is validated (by
// kubeadm itself when the tools cache has it), the chart renders with the
// HelmChartProxy's values, and CAPO's cloud.conf authenticates against the
// simulator. No Cluster API controller runs here.
package capi
