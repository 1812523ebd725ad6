package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/stackward/stackward/pkg/pki"
)

const pkiUsage = `Usage: stackward pki init [flags]

Creates the dedicated kubelet-serving CA, kubelet-serving-ca.crt and
kubelet-serving-ca.key (mode 0600), in --dir, before 'kubeadm init'.
kube-controller-manager signs kubelet serving certificates with it and the
apiserver verifies kubelets with it (bootstrap/init-configuration.yaml);
pods and kubelets keep trusting only the cluster CA, so a kubelet's serving
certificate can never pass for the apiserver.

Idempotent: an existing CA is left as it is; a key is never overwritten.

Flags:
`

func runPKI(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "init" {
		fmt.Fprint(stderr, pkiUsage)
		return 2
	}
	opts := pki.InitOptions{}
	fs := flag.NewFlagSet("stackward pki init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Dir, "dir", "/etc/kubernetes/pki", "PKI directory (kubeadm's certificatesDir).")
	fs.StringVar(&opts.KeyAlgorithm, "key-algorithm", pki.KeyECDSA, "CA key: ecdsa (P-256) or rsa (3072 bits).")
	fs.DurationVar(&opts.Lifetime, "lifetime", pki.DefaultCALifetime, "Lifetime of the CA certificate.")
	fs.Usage = func() {
		fmt.Fprint(stderr, pkiUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "stackward pki init: unexpected arguments %v\n", fs.Args())
		return 2
	}
	res, err := pki.Init(opts)
	if err != nil {
		fmt.Fprintln(stderr, "stackward", err)
		return 1
	}
	verb := "kept the existing"
	if res.Created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s kubelet-serving CA %q valid until %s:\n  %s\n  %s\n", verb, res.Cert.Subject.CommonName,
		res.Cert.NotAfter.UTC().Format("2006-01-02"), res.CertPath, res.KeyPath)
	return 0
}
