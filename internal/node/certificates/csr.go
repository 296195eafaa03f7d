package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// Signers and usages of the node's certificates, as upstream requests them.
const (
	ClientSigner  = certificatesv1.KubeAPIServerClientKubeletSignerName
	ServingSigner = certificatesv1.KubeletServingSignerName
)

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

// pollInterval is how often a pending request is read again; progressEvery how often the wait
// is logged.
var (
	pollInterval  = time.Second
	progressEvery = 30 * time.Second
)

// deniedError: an approver or the signer said no (denied or failed); errStale: what was found
// under the request's name cannot be used (another key's request, an expired certificate).
// Either way asking again with the same key gets the same answer, so the key is dropped.
var errStale = errors.New("certificate signing request unusable")

type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }

func denied(err error) bool {
	var d *deniedError
	return errors.As(err, &d)
}

// certRequest is one certificate the node asks for.
type certRequest struct {
	signer string
	usages []certificatesv1.KeyUsage
	tmpl   *x509.CertificateRequest
}

// request asks for a certificate for r with the store's pending key (kept on disk until the
// certificate is stored) and waits until the signer issues it, the request is refused, or ctx
// ends. The request is named after the key and what it asks for, so after a restart the same
// key finds its own request, approved or still pending, instead of making another.
func request(ctx context.Context, csrs kubeclient.CertificateSigningRequestInterface, store Store, r certRequest) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := store.pendingKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, r.tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate request: %w", err)
	}
	name := csrName(&key.PublicKey, r)
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer,
			Usages:     r.usages,
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if csr, err = csrs.Get(ctx, name, metav1.GetOptions{}); err == nil {
			err = sameRequest(csr, &key.PublicKey, r)
			if errors.Is(err, errStale) {
				store.dropPendingKey()
			}
		}
		if err == nil {
			klog.InfoS("Found the certificate signing request made with the kept key", "csr", name, "signer", r.signer)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("creating the certificate signing request: %w", err)
	}
	klog.InfoS("Waiting for the certificate signing request to be approved and issued", "csr", name, "signer", r.signer)
	certPEM, err = waitIssued(ctx, csrs, name)
	if err == nil {
		err = usable(certPEM, keyPEM)
	}
	if denied(err) || errors.Is(err, errStale) {
		store.dropPendingKey() // the next attempt makes a new key, hence a new request
	}
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// csrName is "node-csr-" and a digest of the public key and what is asked for.
func csrName(pub *ecdsa.PublicKey, r certRequest) string {
	h := sha256.New()
	der, _ := x509.MarshalPKIXPublicKey(pub)
	h.Write(der)
	fields := []string{r.signer, r.tmpl.Subject.CommonName, strings.Join(r.tmpl.Subject.Organization, ","), strings.Join(r.tmpl.DNSNames, ",")}
	for _, ip := range r.tmpl.IPAddresses {
		fields = append(fields, ip.String())
	}
	for _, u := range r.usages {
		fields = append(fields, string(u))
	}
	h.Write([]byte(strings.Join(fields, "\x00")))
	return "node-csr-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// sameRequest checks that an existing request of our name asks what we ask, with our key.
func sameRequest(csr *certificatesv1.CertificateSigningRequest, pub *ecdsa.PublicKey, r certRequest) error {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return fmt.Errorf("%w: %s holds no PEM request", errStale, csr.Name)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: %v", errStale, csr.Name, err)
	case csr.Spec.SignerName != r.signer || !slices.Equal(csr.Spec.Usages, r.usages):
		return fmt.Errorf("%w: %s asks signer %s for %v, not %s for %v", errStale, csr.Name, csr.Spec.SignerName, csr.Spec.Usages, r.signer, r.usages)
	case !samePublicKey(req.PublicKey, pub) || req.Subject.CommonName != r.tmpl.Subject.CommonName:
		return fmt.Errorf("%w: %s is another key's request", errStale, csr.Name)
	}
	return nil
}

// usable: the issued certificate is for our key and not already expired (an old request found
// after a long outage).
func usable(certPEM, keyPEM []byte) error {
	pair, err := parsePair("issued certificate", certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%w: %v", errStale, err)
	}
	if time.Now().After(pair.Leaf.NotAfter) {
		return fmt.Errorf("%w: the issued certificate expired %s", errStale, pair.Leaf.NotAfter)
	}
	return nil
}

// waitIssued polls the request until it carries a certificate.
func waitIssued(ctx context.Context, csrs kubeclient.CertificateSigningRequestInterface, name string) ([]byte, error) {
	started, lastLog := time.Now(), time.Now()
	var cert []byte
	var verdict error
	done := func(ctx context.Context) (bool, error) {
		csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			var finished bool
			if cert, finished, verdict = issued(csr); finished {
				return true, nil
			}
		} else {
			klog.V(2).InfoS("Reading the certificate signing request failed; will retry", "csr", name, "err", err)
		}
		if time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			klog.InfoS("Still waiting for the certificate signing request", "csr", name, "waited", time.Since(started).Round(time.Second),
				"hint", "an approver must approve it (kube-controller-manager's csrapproving controller with the node bootstrap RBAC bindings, or kubectl certificate approve "+name+")")
		}
		return false, nil
	}
	if err := wait.PollUntilContextCancel(ctx, pollInterval, true, done); err != nil {
		return nil, fmt.Errorf("waiting for certificate signing request %s: %w", name, ctx.Err())
	}
	return cert, verdict
}

// issued: done is true once the request is denied, failed or carries its certificate.
func issued(csr *certificatesv1.CertificateSigningRequest) (cert []byte, done bool, err error) {
	for _, c := range csr.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, &deniedError{fmt.Sprintf("certificate signing request %s was denied: %s %s", csr.Name, c.Reason, c.Message)}
		case certificatesv1.CertificateFailed:
			return nil, true, &deniedError{fmt.Sprintf("certificate signing request %s failed: %s %s", csr.Name, c.Reason, c.Message)}
		}
	}
	if len(csr.Status.Certificate) == 0 {
		return nil, false, nil
	}
	return csr.Status.Certificate, true, nil
}
