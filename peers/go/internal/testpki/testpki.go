// Package testpki writes a private CA and a server certificate for tests, as the controller
// does for a campaign: ECDSA P-256, the leaf valid for localhost and 127.0.0.1, key in PKCS#8.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the paths of a test PKI.
type Files struct {
	CA, OtherCA, Cert, Key string
}

// Write creates the files in a temporary directory of t.
func Write(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	caKey, ca := authority(t, "rpcarena test CA")
	_, other := authority(t, "another CA")
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leaf, err := x509.CreateCertificate(rand.Reader, template, ca, &leafKey.PublicKey, caKey)
	check(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(leafKey)
	check(t, err)
	files := Files{
		CA:      filepath.Join(dir, "ca.pem"),
		OtherCA: filepath.Join(dir, "other-ca.pem"),
		Cert:    filepath.Join(dir, "server.pem"),
		Key:     filepath.Join(dir, "server.key"),
	}
	write(t, files.CA, "CERTIFICATE", ca.Raw)
	write(t, files.OtherCA, "CERTIFICATE", other.Raw)
	write(t, files.Cert, "CERTIFICATE", leaf)
	write(t, files.Key, "PRIVATE KEY", pkcs8)
	return files
}

func authority(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	check(t, err)
	certificate, err := x509.ParseCertificate(der)
	check(t, err)
	return key, certificate
}

func write(t testing.TB, path, kind string, der []byte) {
	check(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
