package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
)

// newRuntimeService dials the fake CRI runtime at endpoint (cri-client 1.34:
// no context, no streaming option, an explicit logger).
func newRuntimeService(ctx context.Context, endpoint string) (internalapi.RuntimeService, error) {
	logger := klog.FromContext(ctx)
	return remote.NewRemoteRuntimeService(endpoint, 15*time.Second, noop.NewTracerProvider(), &logger)
}
