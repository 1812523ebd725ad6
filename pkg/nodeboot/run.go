package nodeboot

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/klog/v2"
)

// source is one place the instance's metadata can come from.
type source interface {
	Name() string
	Fetch(ctx context.Context) (*Instance, error)
}

// Settings are the node-specific kubelet settings derived from the metadata.
type Settings struct {
	Instance   *Instance
	ProviderID string
	NodeIPs    []netip.Addr
}

// NodeIP is the value of the kubelet's --node-ip: one address, or IPv4 and
// IPv6 separated by a comma.
func (s Settings) NodeIP() string {
	parts := make([]string, len(s.NodeIPs))
	for i, a := range s.NodeIPs {
		parts[i] = a.String()
	}
	return strings.Join(parts, ",")
}

// KubeletArgs are the kubelet flags, in the order they are written.
func (s Settings) KubeletArgs() [][2]string {
	return [][2]string{
		{"cloud-provider", "external"},
		{"provider-id", s.ProviderID},
		{"node-ip", s.NodeIP()},
	}
}

// ProviderID is the Kubernetes provider ID of an OpenStack server, in the
// form the upstream CCM and Stackward parse.
func ProviderID(region, uuid string) string {
	return "openstack://" + region + "/" + uuid
}

// Run reads the metadata, chooses the settings and writes (or prints) them.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s, err := Resolve(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.Print {
		return printSettings(cfg.Stdout, s)
	}
	return writeOutputs(ctx, cfg, s)
}

// Resolve reads the sources in cfg.SearchOrder and chooses the settings.
func Resolve(ctx context.Context, cfg Config) (Settings, error) {
	sources, err := buildSources(cfg)
	if err != nil {
		return Settings{}, err
	}
	inst, err := fetchConsistent(ctx, sources, cfg.CrossCheck)
	if err != nil {
		return Settings{}, err
	}
	prefs, _ := cfg.preferCIDRs() // validated
	list := cfg.Interfaces
	if list == nil {
		list = SystemInterfaces
	}
	ips, err := ChooseNodeIPs(inst, Selector{Network: cfg.Network, PreferCIDRs: prefs, Family: IPFamily(cfg.IPFamily)}, list)
	if err != nil {
		return Settings{}, err
	}
	s := Settings{Instance: inst, ProviderID: ProviderID(cfg.Region, inst.Meta.UUID), NodeIPs: ips}
	warnIfNotLocal(ctx, ips, list)
	klog.FromContext(ctx).Info("Resolved node settings", "source", inst.Source, "origin", inst.Origin,
		"instance", inst.Meta.UUID, "name", inst.Meta.Name, "providerID", s.ProviderID, "nodeIP", s.NodeIP())
	return s, nil
}

func buildSources(cfg Config) ([]source, error) {
	var out []source
	for _, name := range cfg.SearchOrder {
		switch name {
		case SourceMetadataService:
			m, err := newMetadataService(cfg)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case SourceConfigDrive:
			cd := &configDrive{dir: cfg.ConfigDriveDir, byLabelDir: cfg.DiskByLabelDir, mounter: cfg.Mounter}
			if cd.byLabelDir == "" {
				cd.byLabelDir = "/dev/disk/by-label"
			}
			if cd.mounter == nil {
				cd.mounter = execMounter{}
			}
			out = append(out, cd)
		}
	}
	return out, nil
}

// fetchConsistent returns the first source's answer. A source that is not
// there is skipped; one that answers with broken data stops everything, as
// does (with crossCheck) a later source that disagrees on uuid or name.
func fetchConsistent(ctx context.Context, sources []source, crossCheck bool) (*Instance, error) {
	logger := klog.FromContext(ctx)
	var (
		first   *Instance
		skipped []error
	)
	for _, src := range sources {
		if first != nil && !crossCheck {
			break
		}
		inst, err := src.Fetch(ctx)
		if err != nil {
			if !isUnavailable(err) || ctx.Err() != nil {
				return nil, fmt.Errorf("source %s: %w", src.Name(), err)
			}
			logger.Info("Metadata source not available", "source", src.Name(), "err", err.Error())
			skipped = append(skipped, fmt.Errorf("source %s: %w", src.Name(), err))
			continue
		}
		if first == nil {
			first = inst
			continue
		}
		if err := compare(first, inst); err != nil {
			return nil, err
		}
	}
	if first == nil {
		return nil, fmt.Errorf("no metadata source answered: %w", errors.Join(skipped...))
	}
	return first, nil
}

func compare(a, b *Instance) error {
	if a.Meta.UUID != b.Meta.UUID {
		return fmt.Errorf("field %q: %s (%s) says %q but %s (%s) says %q: %w",
			"uuid", a.Source, a.Origin, a.Meta.UUID, b.Source, b.Origin, b.Meta.UUID, ErrInconsistent)
	}
	if a.Meta.Name != "" && b.Meta.Name != "" && a.Meta.Name != b.Meta.Name {
		return fmt.Errorf("field %q: %s (%s) says %q but %s (%s) says %q: %w",
			"name", a.Source, a.Origin, a.Meta.Name, b.Source, b.Origin, b.Meta.Name, ErrInconsistent)
	}
	return nil
}

// warnIfNotLocal logs when a chosen address is on no local interface: the
// kubelet validates its --node-ip against the host's addresses, so this
// would fail later and less clearly. Only a warning, because the network may
// still be coming up while stackward-node runs.
func warnIfNotLocal(ctx context.Context, ips []netip.Addr, list InterfaceLister) {
	locals, err := list()
	if err != nil {
		return
	}
	for _, ip := range ips {
		found := false
		for _, li := range locals {
			if slices.Contains(li.Addrs, ip) {
				found = true
				break
			}
		}
		if !found {
			klog.FromContext(ctx).Info("Warning: the node IP is not on any local interface (yet); the kubelet needs it there", "nodeIP", ip)
		}
	}
}
