package nodeboot

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// Config is everything stackward-node is told on its command line.
type Config struct {
	// SearchOrder lists the sources to read, first answer wins; the words
	// are the upstream CCM's: metadataService, configDrive.
	SearchOrder []string
	// CrossCheck reads the remaining available sources too and refuses if
	// they disagree with the first on uuid or name.
	CrossCheck bool

	MetadataURL        string // base URL, http://169.254.169.254
	MetadataSourceIP   string // local address to send requests from
	MetadataInstanceID string // sent as X-Stackward-Instance-ID (simulator only)
	RequestTimeout     time.Duration
	Attempts           int
	RetryBackoff       time.Duration

	ConfigDriveDir string // a mounted or unpacked config drive; empty: find by label

	Network     string
	PreferCIDRs []string
	IPFamily    string
	Region      string

	OutputDir          string // where the files are written
	JoinConfigTemplate string // a kubeadm JoinConfiguration to complete; optional
	Print              bool   // print KEY=VALUE to Stdout, write no file

	Stdout io.Writer

	// Test seams; nil means the real thing.
	Interfaces     InterfaceLister
	Mounter        Mounter
	DiskByLabelDir string
}

// DefaultConfig returns the defaults the flags start from.
func DefaultConfig() Config {
	return Config{
		SearchOrder:    []string{SourceConfigDrive, SourceMetadataService},
		CrossCheck:     true,
		MetadataURL:    "http://169.254.169.254",
		RequestTimeout: 5 * time.Second,
		Attempts:       5,
		RetryBackoff:   time.Second,
		IPFamily:       string(IPv4),
		OutputDir:      "/etc/stackward",
	}
}

// safeValue is what may go into a provider ID, a command line and an
// environment file without quoting.
var safeValue = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Validate reports every problem at once, each naming its flag.
func (c *Config) Validate() error {
	var errs []error
	if len(c.SearchOrder) == 0 {
		errs = append(errs, errors.New("--search-order: empty"))
	}
	for i, s := range c.SearchOrder {
		if s != SourceMetadataService && s != SourceConfigDrive {
			errs = append(errs, fmt.Errorf("--search-order: %q is neither %s nor %s", s, SourceMetadataService, SourceConfigDrive))
		}
		if slices.Index(c.SearchOrder, s) != i {
			errs = append(errs, fmt.Errorf("--search-order: %q listed twice", s))
		}
	}
	if slices.Contains(c.SearchOrder, SourceMetadataService) {
		if c.MetadataURL == "" {
			errs = append(errs, errors.New("--metadata-url: empty"))
		}
		if c.RequestTimeout <= 0 {
			errs = append(errs, fmt.Errorf("--timeout: %s is not positive", c.RequestTimeout))
		}
		if c.Attempts < 1 || c.Attempts > 100 {
			errs = append(errs, fmt.Errorf("--attempts: %d is not between 1 and 100", c.Attempts))
		}
		if c.RetryBackoff < 0 {
			errs = append(errs, fmt.Errorf("--retry-backoff: %s is negative", c.RetryBackoff))
		}
		if c.MetadataSourceIP != "" {
			if _, err := netip.ParseAddr(c.MetadataSourceIP); err != nil {
				errs = append(errs, fmt.Errorf("--metadata-source-ip: %w", err))
			}
		}
	}
	if _, err := c.preferCIDRs(); err != nil {
		errs = append(errs, err)
	}
	switch IPFamily(c.IPFamily) {
	case IPv4, IPv6, Dual:
	default:
		errs = append(errs, fmt.Errorf("--ip-family: %q is not one of ipv4, ipv6, dual", c.IPFamily))
	}
	if c.Region != "" && !safeValue.MatchString(c.Region) {
		errs = append(errs, fmt.Errorf("--region: %q may contain only letters, digits, '.', '_' and '-'", c.Region))
	}
	if !c.Print && c.OutputDir == "" {
		errs = append(errs, errors.New("--output-dir: empty (use --print to write nothing)"))
	}
	if c.JoinConfigTemplate != "" && c.Print {
		errs = append(errs, errors.New("--join-config: writes a file, which --print does not"))
	}
	return errors.Join(errs...)
}

func (c *Config) preferCIDRs() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.PreferCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--prefer-cidr: %w", err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (c *Config) outputDir() (string, error) {
	d, err := filepath.Abs(c.OutputDir)
	if err != nil {
		return "", fmt.Errorf("--output-dir %s: %w", c.OutputDir, err)
	}
	return d, nil
}
