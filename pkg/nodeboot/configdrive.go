package nodeboot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"
)

// configDriveLabels are the filesystem labels Nova gives a config drive:
// iso9660 drives are labelled config-2, vfat ones CONFIG-2.
var configDriveLabels = []string{"config-2", "CONFIG-2"}

// Mounter mounts a block device read-only and unmounts it. The real one
// runs mount(8); tests replace it.
type Mounter interface {
	MountReadOnly(ctx context.Context, device, dir string) error
	Unmount(ctx context.Context, dir string) error
}

// execMounter runs mount(8) and umount(8), letting mount detect iso9660 or
// vfat, as the upstream CCM does.
type execMounter struct{}

func (execMounter) MountReadOnly(ctx context.Context, device, dir string) error {
	out, err := exec.CommandContext(ctx, "mount", "-o", "ro", device, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount -o ro %s %s: %w: %s", device, dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (execMounter) Unmount(ctx context.Context, dir string) error {
	out, err := exec.CommandContext(ctx, "umount", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("umount %s: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// configDrive reads openstack/latest/ from a directory, or from the device
// labelled config-2 mounted read-only into a temporary directory.
type configDrive struct {
	dir        string // --config-drive-dir; empty means find the device
	byLabelDir string // /dev/disk/by-label
	mounter    Mounter
}

func (c *configDrive) Name() string { return SourceConfigDrive }

func (c *configDrive) Fetch(ctx context.Context) (*Instance, error) {
	if c.dir != "" {
		if _, err := os.Stat(c.dir); err != nil {
			return nil, fmt.Errorf("config drive directory %s: %w: %w", c.dir, ErrSourceUnavailable, err)
		}
		return readConfigDriveDir(c.dir)
	}
	device, err := c.findDevice()
	if err != nil {
		return nil, err
	}
	mnt, err := os.MkdirTemp("", "stackward-config-drive-")
	if err != nil {
		return nil, fmt.Errorf("config drive mount point: %w", err)
	}
	defer os.Remove(mnt)
	if err := c.mounter.MountReadOnly(ctx, device, mnt); err != nil {
		return nil, fmt.Errorf("config drive %s: %w: %w", device, ErrSourceUnavailable, err)
	}
	defer func() {
		// Unmount even if ctx was cancelled: a leaked mount outlives us.
		if err := c.mounter.Unmount(context.WithoutCancel(ctx), mnt); err != nil {
			klog.FromContext(ctx).Error(err, "Could not unmount the config drive", "dir", mnt)
		}
	}()
	inst, err := readConfigDriveDir(mnt)
	if err != nil {
		return nil, err
	}
	inst.Origin = device
	return inst, nil
}

// findDevice returns the block device carrying a config-drive label.
func (c *configDrive) findDevice() (string, error) {
	for _, label := range configDriveLabels {
		p := filepath.Join(c.byLabelDir, label)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("config drive %s: %w", p, err)
		}
	}
	return "", fmt.Errorf("no config drive: no %s in %s: %w",
		strings.Join(configDriveLabels, " or "), c.byLabelDir, ErrSourceUnavailable)
}

// readConfigDriveDir reads dir/openstack/latest/{meta_data,network_data}.json.
func readConfigDriveDir(dir string) (*Instance, error) {
	mdPath := filepath.Join(dir, latestPath, metaDataFile)
	b, err := os.ReadFile(mdPath)
	if err != nil {
		return nil, fmt.Errorf("config drive: read %s: %w: %w", mdPath, ErrSourceUnavailable, err)
	}
	md, err := decodeMetaData(b, mdPath)
	if err != nil {
		return nil, err
	}
	ndPath := filepath.Join(dir, latestPath, networkDataFile)
	b, err = os.ReadFile(ndPath)
	if err != nil {
		return nil, fmt.Errorf("config drive: read %s: %w: %w", ndPath, ErrSourceUnavailable, err)
	}
	nd, err := decodeNetworkData(b, ndPath)
	if err != nil {
		return nil, err
	}
	return &Instance{Source: SourceConfigDrive, Origin: dir, Meta: md, Network: nd}, nil
}
