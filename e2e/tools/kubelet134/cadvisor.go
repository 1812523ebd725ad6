package main

import (
	cadvisorapi "github.com/google/cadvisor/info/v1"
	cadvisorapiv2 "github.com/google/cadvisor/info/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
)

// cAdvisor's API types as the 1.34 kubelet takes them: info/v1 and
// info/v2 (usage.go, shared with the 1.37 kubelet through a link).
type (
	requestOptions = cadvisorapiv2.RequestOptions
	containerInfo  = cadvisorapiv2.ContainerInfo
	containerSpec  = cadvisorapiv2.ContainerSpec
	containerStats = cadvisorapiv2.ContainerStats
	memorySpec     = cadvisorapiv2.MemorySpec
	cpuStats       = cadvisorapi.CpuStats
	cpuUsage       = cadvisorapi.CpuUsage
	memoryStats    = cadvisorapi.MemoryStats
	cpuInstStats   = cadvisorapiv2.CpuInstStats
	cpuInstUsage   = cadvisorapiv2.CpuInstUsage
)

// machineMemory is the fake machine's memory capacity.
func machineMemory(f *cadvisortest.Fake) (uint64, error) {
	m, err := f.MachineInfo()
	if err != nil {
		return 0, err
	}
	return m.MemoryCapacity, nil
}
