// Command regtool prepares the distribution registry the e2e tests run and fills it:
//
//	regtool tls -dir DIR                      CA (DIR/ca.crt) and a loopback serving pair, once
//	regtool htpasswd -out FILE -user U:P      an htpasswd file (bcrypt) the registry's auth reads
//	regtool push -tar T -src NAME -dst REF [-ca CA] [-user U:P]
//	                                          push image NAME of the docker archive T to REF
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/bcrypt"
)

const usage = "usage: regtool tls -dir DIR | htpasswd -out FILE -user U:P | push -tar T -src NAME -dst REF [-ca CA] [-user U:P]"

func main() {
	if len(os.Args) < 2 {
		fail(errors.New(usage))
	}
	fs := flag.NewFlagSet("regtool "+os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "tls: where ca.crt, tls.crt and tls.key go")
	out := fs.String("out", "", "htpasswd: the file to write")
	user := fs.String("user", "", "htpasswd, push: user:password")
	tarPath := fs.String("tar", "", "push: docker archive (hack/images.sh writes them under _output/images)")
	src := fs.String("src", "", "push: the image's name in the archive")
	dst := fs.String("dst", "", "push: where to push it, host:port/repo:tag")
	ca := fs.String("ca", "", "push: CA bundle the registry's certificate chains to (https)")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "tls":
		if *dir == "" {
			err = errors.New("tls: -dir is required")
		} else {
			_, _, err = ensureTLS(*dir)
		}
	case "htpasswd":
		err = writeHtpasswd(*out, *user)
	case "push":
		err = push(*tarPath, *src, *dst, *ca, *user)
	default:
		err = errors.New(usage)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "regtool:", err)
	os.Exit(1)
}

// writeHtpasswd writes one user's bcrypt entry, the format the registry's htpasswd auth reads.
func writeHtpasswd(out, userPassword string) error {
	user, password, ok := strings.Cut(userPassword, ":")
	if out == "" || !ok || user == "" {
		return errors.New("htpasswd: -out and -user USER:PASSWORD are required")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(user+":"+string(hash)+"\n"), 0o600)
}

// push uploads image src of the docker archive tarPath to dst.
func push(tarPath, src, dst, caFile, userPassword string) error {
	if tarPath == "" || src == "" || dst == "" {
		return errors.New("push: -tar, -src and -dst are required")
	}
	tag, err := name.NewTag(src)
	if err != nil {
		return fmt.Errorf("push: -src %q: %w", src, err)
	}
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		return fmt.Errorf("push: reading %s from %s: %w", src, tarPath, err)
	}
	ref, err := name.ParseReference(dst)
	if err != nil {
		return fmt.Errorf("push: -dst %q: %w", dst, err)
	}
	opts := []remote.Option{}
	if userPassword != "" {
		user, password, _ := strings.Cut(userPassword, ":")
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("push: no certificate in %s", caFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		opts = append(opts, remote.WithTransport(tr))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		return fmt.Errorf("push: %s to %s: %w", src, dst, err)
	}
	return nil
}
