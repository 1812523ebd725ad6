// Command imagetool builds Stackward's container images and publishes a
// release; `make images` and `make release` (hack/release.sh) call it, and it
// is never shipped.
//
//	imagetool build -bins DIR -out DIR -version V -revision R -epoch S NAME...
//	imagetool check -registry HOST/PATH [-plain-http] NAME...
//	imagetool push  -layouts DIR -registry HOST/PATH -tag V [-plain-http] NAME...
//	imagetool chart -src DIR -out DIR -registry HOST/PATH
//
// build writes one OCI image layout per image (bin/images/NAME), each holding
// a single image index for linux/amd64 and linux/arm64. Everything it puts
// into an image is a function of its inputs: the binaries, the flags and the
// pinned Go modules; no clock, no host file, so the same inputs give the same
// digests.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagetool build|check|push|chart [flags] [NAME...]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "build":
		err = runBuild(args)
	case "check":
		err = runCheck(args)
	case "push":
		err = runPush(args)
	case "chart":
		err = runChart(args)
	default:
		err = fmt.Errorf("unknown command %q (build, check, push, chart)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagetool:", err)
		os.Exit(1)
	}
}

func runBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	var o BuildOptions
	var epoch string
	fs.StringVar(&o.BinDir, "bins", "", "directory with linux_<arch>/<binary> for every platform")
	fs.StringVar(&o.OutDir, "out", "", "directory for the OCI layouts (one per image); replaced")
	fs.StringVar(&o.Version, "version", "", "version: the org.opencontainers.image.version label")
	fs.StringVar(&o.Revision, "revision", "", "source revision (git commit)")
	fs.StringVar(&o.Source, "source", "https://github.com/stackward/stackward", "org.opencontainers.image.source")
	fs.StringVar(&epoch, "epoch", "", "creation time in seconds since 1970 (the commit's time: SOURCE_DATE_EPOCH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Images = fs.Args()
	var errs []error
	for flagName, v := range map[string]string{"bins": o.BinDir, "out": o.OutDir, "version": o.Version, "revision": o.Revision, "epoch": epoch} {
		if v == "" {
			errs = append(errs, fmt.Errorf("-%s is required", flagName))
		}
	}
	if len(o.Images) == 0 {
		errs = append(errs, errors.New("name at least one image (a binary under -bins)"))
	}
	if epoch != "" {
		s, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("-epoch %q: %w", epoch, err))
		}
		o.Created = time.Unix(s, 0).UTC()
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	built, err := Build(o)
	if err != nil {
		return err
	}
	for _, b := range built {
		var sizes []string
		for _, p := range b.Platforms {
			sizes = append(sizes, fmt.Sprintf("%s %.1f MiB", p.Platform, float64(p.Size)/(1<<20)))
		}
		fmt.Printf("%-20s %s  (%s)  %s\n", b.Name, b.Digest, strings.Join(sizes, ", "), b.Layout)
	}
	return nil
}

// registryFlags are the flags check and push share.
func registryFlags(fs *flag.FlagSet) *Target {
	t := &Target{}
	fs.StringVar(&t.Registry, "registry", "", "registry and path the images go to, e.g. registry.example.com/stackward")
	fs.BoolVar(&t.PlainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to the registry")
	return t
}

func runCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	t := registryFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if t.Registry == "" {
		return errors.New("-registry is required")
	}
	return t.Check(fs.Args())
}

func runPush(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	t := registryFlags(fs)
	layouts := fs.String("layouts", "", "directory of the OCI layouts `imagetool build` wrote")
	tag := fs.String("tag", "", "tag for every image (the release's version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if t.Registry == "" || *layouts == "" || *tag == "" || fs.NArg() == 0 {
		return errors.New("-registry, -layouts, -tag and at least one image name are required")
	}
	pushed, err := t.Push(*layouts, *tag, fs.Args())
	for _, p := range pushed {
		fmt.Println(p)
	}
	return err
}

func runChart(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ContinueOnError)
	src := fs.String("src", "", "the chart's directory (charts/stackward)")
	out := fs.String("out", "", "directory to write the release's copy of the chart into; replaced")
	registry := fs.String("registry", "", "registry and path of the release's images")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *src == "" || *out == "" || *registry == "" {
		return errors.New("-src, -out and -registry are required")
	}
	return ReleaseChart(*src, *out, *registry)
}
