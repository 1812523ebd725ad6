package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stackward/stackward/pkg/pki"
)

const pkiUsage = `Usage: stackward pki <init|export|import|rotate> [flags]

The dedicated kubelet-serving CA, kubelet-serving-ca.crt and
kubelet-serving-ca.key (mode 0600), in --dir. kube-controller-manager (or
the approver's built-in signer) signs kubelet serving certificates with it
and the apiserver verifies kubelets with it (bootstrap/init-configuration.yaml);
pods and kubelets keep trusting only the cluster CA, so a kubelet's serving
certificate can never pass for the apiserver.

  init    create it before 'kubeadm init'. Idempotent: an existing CA is left
          as it is; a key is never overwritten.
  export  print it, key included, as the Secret manifest the chart's signer
          reads (` + pki.SecretNamespace + `/` + pki.SecretName + `), to carry it to the
          other control-plane hosts (kubeadm's certificate upload cannot).
          During a rotation it carries the trust bundle too, which the
          approver publishes to clients of kubelets; --next exports the next
          CA instead.
  import  write an exported CA into --dir on another control-plane host,
          before 'kubeadm join --control-plane'. Keeps the same CA, refuses
          a different one.
  rotate  create the next CA beside the current one and the trust bundle of
          both, and print the steps of the switch; --finish promotes it.
`

func runPKI(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pkiUsage)
		return 2
	}
	switch args[0] {
	case "init", "export", "import", "rotate":
	default:
		fmt.Fprint(stderr, pkiUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("stackward pki "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "/etc/kubernetes/pki", "PKI directory (kubeadm's certificatesDir).")
	keyAlgorithm, lifetime := pki.KeyECDSA, pki.DefaultCALifetime
	if sub == "init" || sub == "rotate" {
		fs.StringVar(&keyAlgorithm, "key-algorithm", pki.KeyECDSA, "CA key: ecdsa (P-256) or rsa (3072 bits).")
		fs.DurationVar(&lifetime, "lifetime", pki.DefaultCALifetime, "Lifetime of the CA certificate.")
	}
	finish, next := false, false
	if sub == "export" {
		fs.BoolVar(&next, "next", false, "Export the next CA of a rotation (kubelet-serving-ca-next.*) under the usual key names, for the approver's built-in signer.")
	}
	if sub == "rotate" {
		fs.BoolVar(&finish, "finish", false, "Promote the next CA to kubelet-serving-ca.{crt,key} (the old pair is kept as kubelet-serving-ca-old.*); run it when every kubelet serves a certificate of the next CA.")
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, pkiUsage+"\nFlags of "+sub+":\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	wantArgs := 0
	if sub == "import" {
		wantArgs = 1
	}
	if fs.NArg() != wantArgs {
		fmt.Fprintf(stderr, "stackward pki %s: want %d arguments, got %v\n", sub, wantArgs, fs.Args())
		return 2
	}
	var err error
	switch sub {
	case "init":
		err = pkiInit(stdout, pki.InitOptions{Dir: *dir, KeyAlgorithm: keyAlgorithm, Lifetime: lifetime})
	case "export":
		export := pki.Export
		if next {
			export = pki.ExportNext
		}
		var out []byte
		if out, err = export(*dir); err == nil {
			_, err = stdout.Write(out)
		}
	case "import":
		err = pkiImport(stdout, *dir, fs.Arg(0))
	case "rotate":
		if finish {
			err = pkiFinish(stdout, *dir)
		} else {
			err = pkiRotate(stdout, pki.RotateOptions{Dir: *dir, KeyAlgorithm: keyAlgorithm, Lifetime: lifetime})
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "stackward", err)
		return 1
	}
	return 0
}

func pkiInit(stdout io.Writer, opts pki.InitOptions) error {
	res, err := pki.Init(opts)
	if err != nil {
		return err
	}
	verb := "kept the existing"
	if res.Created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s kubelet-serving CA %q valid until %s:\n  %s\n  %s\n", verb, res.Cert.Subject.CommonName,
		res.Cert.NotAfter.UTC().Format("2006-01-02"), res.CertPath, res.KeyPath)
	return nil
}

func pkiImport(stdout io.Writer, dir, path string) error {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("pki import: %w", err)
	}
	res, err := pki.Import(dir, data, path)
	if err != nil {
		return err
	}
	verb := "already had"
	if res.Created {
		verb = "imported"
	}
	fmt.Fprintf(stdout, "%s kubelet-serving CA %q (serial %s) valid until %s:\n  %s\n  %s\n", verb, res.CA.Cert.Subject.CommonName,
		res.CA.Cert.SerialNumber, res.CA.Cert.NotAfter.UTC().Format("2006-01-02"), res.CertPath, res.KeyPath)
	return nil
}

// rotateSteps is what an operator does between rotate and rotate --finish.
const rotateSteps = `Next steps (bootstrap/README.md, "Rotating the kubelet-serving CA"):
 1. Copy %[2]s,
    %[3]s and
    %[4]s to every other control-plane host.
 2. Trust both CAs: in the kube-system ConfigMap kubeadm-config set the
    apiserver's kubelet-certificate-authority to %[4]s, then on each
    control-plane host run 'kubeadm upgrade node phase control-plane'.
    Publish both to metrics-server and Prometheus:
    'stackward pki export --dir %[1]s | kubectl apply -f -' (the approver
    copies the bundle into its ConfigMap and ClusterTrustBundle).
 3. Sign with the next CA. kube-controller-manager: set
    cluster-signing-kubelet-serving-cert-file and -key-file to the
    two files of step 1 in kubeadm-config, then 'kubeadm upgrade node phase
    control-plane' on each host. The approver's built-in signer:
    'stackward pki export --next --dir %[1]s | kubectl apply -f -'
    replaces the data of the Secret kube-system/%[5]s with the next pair
    and the bundle; once the kubelet has updated the mounted Secret (about a
    minute) it signs with it.
 4. Re-issue every kubelet's serving certificate: on each node remove
    /var/lib/kubelet/pki/kubelet-server-current.pem and restart the kubelet.
    'stackward doctor' lists any request left pending or unsigned.
 5. stackward pki rotate --finish --dir %[1]s on every control-plane host,
    then point kubeadm-config back at kubelet-serving-ca.crt/.key (step 2
    and 3 in reverse) and run 'kubeadm upgrade node phase control-plane'.
    'stackward pki export --dir %[1]s | kubectl apply -f -' then publishes
    the new CA alone.
`

func pkiRotate(stdout io.Writer, opts pki.RotateOptions) error {
	res, err := pki.Rotate(opts)
	if err != nil {
		return err
	}
	verb := "kept the next"
	if res.Created {
		verb = "created the next"
	}
	fmt.Fprintf(stdout, "%s kubelet-serving CA (serial %s, valid until %s) beside the current one (serial %s, valid until %s):\n  %s\n  %s\ntrust bundle of both: %s\n\n",
		verb, res.Next.Cert.SerialNumber, res.Next.Cert.NotAfter.UTC().Format("2006-01-02"),
		res.Current.Cert.SerialNumber, res.Current.Cert.NotAfter.UTC().Format("2006-01-02"),
		res.NextCertPath, res.NextKeyPath, res.BundlePath)
	fmt.Fprintf(stdout, rotateSteps, opts.Dir, res.NextCertPath, res.NextKeyPath, res.BundlePath, pki.SecretName)
	return nil
}

func pkiFinish(stdout io.Writer, dir string) error {
	res, err := pki.Finish(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the kubelet-serving CA is now serial %s (valid until %s): %s\nthe old one is kept as %s and %s\n",
		res.CA.Cert.SerialNumber, res.CA.Cert.NotAfter.UTC().Format("2006-01-02"), res.CertPath, res.OldCertPath, res.OldKeyPath)
	return nil
}
