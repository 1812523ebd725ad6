package main

import (
	model "github.com/google/cadvisor/lib/model"
	"k8s.io/klog/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
)

// cAdvisor's API types as this build's kubelet takes them: from Kubernetes
// 1.37 one package, github.com/google/cadvisor/lib/model (usage.go; the
// 1.34 kubelet has its own cadvisor.go with the info/v1 and info/v2 ones).
type (
	requestOptions = model.RequestOptions
	containerInfo  = model.ContainerInfo
	containerSpec  = model.ContainerSpec
	containerStats = model.ContainerStats
	memorySpec     = model.MemorySpec
	cpuStats       = model.CpuStats
	cpuUsage       = model.CpuUsage
	memoryStats    = model.MemoryStats
	cpuInstStats   = model.CpuInstStats
	cpuInstUsage   = model.CpuInstUsage
)

// machineMemory is the fake machine's memory capacity (1.37: MachineInfo
// takes a logger).
func machineMemory(f *cadvisortest.Fake) (uint64, error) {
	m, err := f.MachineInfo(klog.Background())
	if err != nil {
		return 0, err
	}
	return m.MemoryCapacity, nil
}
