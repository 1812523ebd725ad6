package config

import (
	"strings"
	"testing"
)

func TestContainerStore(t *testing.T) {
	tests := []struct {
		name, conf, want, wantErr string
	}{
		{name: "Barbican is the default", want: "barbican"},
		{name: "external is accepted, as upstream", conf: "container-store = external\n", want: "external"},
		{name: "anything else names the key and the value", conf: "container-store = vault\n",
			wantErr: `cloud.conf: [LoadBalancer] container-store: must be barbican or external, got "vault"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := Read("cloud.conf", strings.NewReader(minimalGlobal+"[LoadBalancer]\n"+tt.conf))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Read: %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LoadBalancer.ContainerStore != tt.want {
				t.Errorf("container-store %q, want %q", cfg.LoadBalancer.ContainerStore, tt.want)
			}
		})
	}
}
