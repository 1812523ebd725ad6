package config

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Parse reads cloud.conf syntax into a Config that starts from Defaults. It
// reports syntax errors and values of the wrong type (all of them, joined),
// and warns about unknown sections and keys. It does not read other files
// and does not Validate.
//
// The syntax is gcfg's (git-config style), which upstream uses: sections
// [Name] or [Name "sub"], "key = value" lines, ';' and '#' comments, double
// quotes with \" \\ \n \t escapes, case-insensitive names, a key without
// "=" meaning true, and repeatable keys where an empty value clears the list.
// gcfg itself is not used because it stops at the first unknown key instead
// of letting us warn and go on.
func Parse(name string, r io.Reader) (*Config, []Warning, error) {
	cfg := Defaults()
	cfg.Source = name
	p := &parser{cfg: cfg, probs: problems{file: name}, seen: map[string]int{}}
	p.fields = fieldsOf(cfg)

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a BOM from Windows editors
		}
		p.line(line, text)
	}
	if err := sc.Err(); err != nil {
		return nil, p.warnings, fmt.Errorf("read %s: %w", name, err)
	}
	if err := p.probs.err(); err != nil {
		return nil, p.warnings, err
	}
	return cfg, p.warnings, nil
}

type parser struct {
	cfg      *Config
	fields   map[string]map[string]field // section (lower) → key (lower) → field
	probs    problems
	warnings []Warning
	section  string           // as written, "" before the first header
	known    bool             // whether the current section is one we parse
	current  map[string]field // the keys of the current section
	seen     map[string]int   // "section.key" → first line, for single-valued keys
}

func (p *parser) warn(line int, key, format string, args ...any) {
	p.warnings = append(p.warnings, Warning{File: p.probs.file, Line: line, Section: p.section, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) line(n int, text string) {
	s := strings.TrimSpace(text)
	if s == "" || s[0] == ';' || s[0] == '#' {
		return
	}
	if s[0] == '[' {
		p.header(n, s)
		return
	}
	if p.section == "" {
		p.probs.add(n, "", "", "key outside of any section: %q", s)
		return
	}
	key, rest, hasValue := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !validName(key) {
		p.probs.add(n, p.section, "", "invalid line %q", s)
		return
	}
	value, err := unquote(rest)
	if err != nil {
		p.probs.add(n, p.section, key, "%v", err)
		return
	}
	if !p.known {
		return // the unknown section was warned about once, at its header
	}
	f, ok := p.current[strings.ToLower(key)]
	if !ok {
		p.warn(n, key, "unknown key, ignored")
		return
	}
	if !f.multi {
		id := strings.ToLower(p.section + "." + f.canonical)
		if first, dup := p.seen[id]; dup {
			p.warn(n, key, "set again (first on line %d); the last value wins", first)
		} else {
			p.seen[id] = n
		}
	}
	if err := f.set(value, hasValue); err != nil {
		p.probs.add(n, p.section, key, "%v", err)
	}
}

func (p *parser) header(n int, s string) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		p.probs.add(n, "", "", "unterminated section header %q", s)
		p.section, p.known = "?", false
		return
	}
	if tail := strings.TrimSpace(s[end+1:]); tail != "" && tail[0] != ';' && tail[0] != '#' {
		p.probs.add(n, "", "", "text after section header %q", s)
	}
	inner := strings.TrimSpace(s[1:end])
	name, sub, hasSub := strings.Cut(inner, " ")
	p.section = name
	if hasSub {
		p.section = name + " " + strings.TrimSpace(sub)
	}
	p.current, p.known = p.fields[strings.ToLower(name)]
	switch {
	case !validName(name):
		p.probs.add(n, "", "", "invalid section header %q", s)
		p.known = false
	case hasSub && strings.EqualFold(name, "LoadBalancerClass"):
		p.current, p.known = p.classSection(n, strings.TrimSpace(sub))
	case hasSub:
		p.warn(n, "", "subsections are not supported, section ignored")
		p.known = false
	case !p.known:
		p.warn(n, "", "unknown section, ignored")
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// unquote turns the text after '=' into a value: quoted parts are kept
// verbatim (with escapes), unquoted parts end at a comment and are trimmed.
func unquote(s string) (string, error) {
	var b strings.Builder
	inQuote := false
	pendingSpace := ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", fmt.Errorf("value ends in a backslash (line continuations are not supported)")
			}
			i++
			switch s[i] {
			case '"', '\\':
				b.WriteString(pendingSpace)
				b.WriteByte(s[i])
			case 'n':
				b.WriteString(pendingSpace)
				b.WriteByte('\n')
			case 't':
				b.WriteString(pendingSpace)
				b.WriteByte('\t')
			default:
				return "", fmt.Errorf("invalid escape \\%c", s[i])
			}
			pendingSpace = ""
		case c == '"':
			b.WriteString(pendingSpace)
			pendingSpace = ""
			inQuote = !inQuote
		case inQuote:
			b.WriteByte(c)
		case c == ';' || c == '#':
			i = len(s)
		case c == ' ' || c == '\t':
			if b.Len() > 0 {
				pendingSpace += string(c)
			}
		default:
			b.WriteString(pendingSpace)
			pendingSpace = ""
			b.WriteByte(c)
		}
	}
	if inQuote {
		return "", fmt.Errorf("unterminated quote")
	}
	return b.String(), nil
}

// field is one key of a section and how to store its value.
type field struct {
	canonical string
	multi     bool
	set       func(value string, hasValue bool) error
}

func str(p *string) field {
	return field{set: func(v string, _ bool) error { *p = v; return nil }}
}

func boolean(p *bool) field {
	return field{set: func(v string, hasValue bool) error {
		if !hasValue {
			*p = true
			return nil
		}
		switch strings.ToLower(v) {
		case "true", "yes", "on", "1":
			*p = true
		case "false", "no", "off", "0":
			*p = false
		default:
			return fmt.Errorf("invalid boolean %q (want true or false)", v)
		}
		return nil
	}}
}

func integer(p *int) field {
	return field{set: func(v string, _ bool) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("invalid integer %q", v)
		}
		*p = n
		return nil
	}}
}

func duration(p *time.Duration) field {
	return field{set: func(v string, _ bool) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("invalid duration %q (want e.g. 5s)", v)
		}
		*p = d
		return nil
	}}
}

// repeated appends every occurrence; an empty value clears the list.
func repeated(p *[]string) field {
	return field{multi: true, set: func(v string, _ bool) error {
		if v == "" {
			*p = nil
			return nil
		}
		*p = append(*p, v)
		return nil
	}}
}

// commaList replaces the list with the comma-separated items of the value.
func commaList(p *[]string) field {
	return field{set: func(v string, _ bool) error {
		*p = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*p = append(*p, item)
			}
		}
		return nil
	}}
}

func prefixes(p *[]netip.Prefix) field {
	return field{set: func(v string, _ bool) error {
		var out []netip.Prefix
		var bad []string
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			pfx, err := netip.ParsePrefix(item)
			if err != nil {
				bad = append(bad, strconv.Quote(item))
				continue
			}
			out = append(out, pfx.Masked())
		}
		if len(bad) > 0 {
			return fmt.Errorf("invalid CIDR %s", strings.Join(bad, ", "))
		}
		*p = out
		return nil
	}}
}

// fieldsOf maps every known section and key of cfg to its field.
func fieldsOf(c *Config) map[string]map[string]field {
	g, n, m, lb := &c.Global, &c.Networking, &c.Metadata, &c.LoadBalancer
	sections := map[string]map[string]field{
		"global": {
			"auth-url":                           str(&g.AuthURL),
			"region":                             str(&g.Region),
			"username":                           str(&g.Username),
			"password":                           str(&g.Password),
			"password-file":                      str(&g.PasswordFile),
			"user-id":                            str(&g.UserID),
			"user-domain-name":                   str(&g.UserDomainName),
			"user-domain-id":                     str(&g.UserDomainID),
			"domain-id":                          str(&g.DomainID),
			"domain-name":                        str(&g.DomainName),
			"tenant-id":                          str(&g.TenantID),
			"tenant-name":                        str(&g.TenantName),
			"tenant-domain-id":                   str(&g.TenantDomainID),
			"tenant-domain-name":                 str(&g.TenantDomainName),
			"application-credential-id":          str(&g.ApplicationCredentialID),
			"application-credential-name":        str(&g.ApplicationCredentialName),
			"application-credential-secret":      str(&g.ApplicationCredentialSecret),
			"application-credential-secret-file": str(&g.ApplicationCredentialSecretFile),
			"trust-id":                           str(&g.TrustID),
			"trustee-id":                         str(&g.TrusteeID),
			"trustee-password":                   str(&g.TrusteePassword),
			"token":                              str(&g.Token),
			"ca-file":                            str(&g.CAFile),
			"cert-file":                          str(&g.CertFile),
			"key-file":                           str(&g.KeyFile),
			"tls-insecure":                       boolean(&g.TLSInsecure),
			"os-endpoint-type":                   str(&g.EndpointType),
			"use-clouds":                         boolean(&g.UseClouds),
			"clouds-file":                        str(&g.CloudsFile),
			"cloud":                              str(&g.Cloud),
		},
		"networking": {
			"internal-network-name": repeated(&n.InternalNetworkNames),
			"public-network-name":   repeated(&n.PublicNetworkNames),
			"ipv6-support-disabled": boolean(&n.IPv6SupportDisabled),
			"address-sort-order":    prefixes(&n.AddressSortOrder),
		},
		"metadata": {
			"search-order":    commaList(&m.SearchOrder),
			"request-timeout": duration(&m.RequestTimeout),
		},
		"loadbalancer": {
			"enabled":                       boolean(&lb.Enabled),
			"lb-version":                    str(&lb.LBVersion),
			"subnet-id":                     str(&lb.SubnetID),
			"member-subnet-id":              str(&lb.MemberSubnetID),
			"network-id":                    str(&lb.NetworkID),
			"floating-network-id":           str(&lb.FloatingNetworkID),
			"floating-subnet-id":            str(&lb.FloatingSubnetID),
			"floating-subnet":               subnetPattern(&lb.FloatingSubnet),
			"floating-subnet-tags":          str(&lb.FloatingSubnetTags),
			"lb-method":                     str(&lb.LBMethod),
			"lb-provider":                   str(&lb.LBProvider),
			"create-monitor":                boolean(&lb.CreateMonitor),
			"monitor-delay":                 duration(&lb.MonitorDelay),
			"monitor-timeout":               duration(&lb.MonitorTimeout),
			"monitor-max-retries":           integer(&lb.MonitorMaxRetries),
			"monitor-max-retries-down":      integer(&lb.MonitorMaxRetriesDown),
			"manage-security-groups":        boolean(&lb.ManageSecurityGroups),
			"internal-lb":                   boolean(&lb.InternalLB),
			"cascade-delete":                boolean(&lb.CascadeDelete),
			"adopt-upstream-load-balancers": boolean(&lb.AdoptUpstream),
			"flavor-id":                     str(&lb.FlavorID),
			"availability-zone":             str(&lb.AvailabilityZone),
			"max-shared-lb":                 integer(&lb.MaxSharedLB),
			"enable-ingress-hostname":       boolean(&lb.EnableIngressHostname),
			"ingress-hostname-suffix":       str(&lb.IngressHostnameSuffix),
			"default-tls-container-ref":     str(&lb.DefaultTLSContainerRef),
			"node-selector":                 nodeSelector(&lb.NodeSelector),
			"container-store":               str(&lb.ContainerStore),
		},
		"route": {
			"router-id":             str(&c.Route.RouterID),
			"adopt-upstream-routes": boolean(&c.Route.AdoptUpstream),
		},
	}
	for _, keys := range sections {
		for k, f := range keys {
			f.canonical = k
			keys[k] = f
		}
	}
	// Keystone v3 says "project" where v2 said "tenant"; accept both.
	for alias, canonical := range map[string]string{
		"project-id":          "tenant-id",
		"project-name":        "tenant-name",
		"project-domain-id":   "tenant-domain-id",
		"project-domain-name": "tenant-domain-name",
	} {
		sections["global"][alias] = sections["global"][canonical]
	}
	return sections
}
