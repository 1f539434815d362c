package plugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "gangplace.local/kubescheduler/gangplacev1"
)

// issue makes a certificate signed by parent (self-signed when nil), written as name.crt/.key.
func issue(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: ca, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(file, kind string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: data}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".crt", "CERTIFICATE", der)
	write(name+".key", "EC PRIVATE KEY", keyDER)
	return cert, key
}

// tokenAdvisor answers gang() to a call carrying "Bearer s3cret", Unauthenticated otherwise.
type tokenAdvisor struct {
	pb.UnimplementedPlacementServiceServer
}

func (tokenAdvisor) Advise(ctx context.Context, _ *pb.AdviseRequest) (*pb.AdviseResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer s3cret" {
		return nil, status.Error(codes.Unauthenticated, "a valid bearer token is required")
	}
	return gang(), nil
}

func TestDialReachesAMutualTLSAdvisorWithItsToken(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := issue(t, dir, "ca", nil, nil, true)
	issue(t, dir, "server", ca, caKey, false)
	issue(t, dir, "client", ca, caKey, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})))
	pb.RegisterPlacementServiceServer(server, tokenAdvisor{})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsArgs := TLSArgs{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, "client.crt"),
		KeyFile: filepath.Join(dir, "client.key")}
	ask := func(args Args) error {
		args.Address = listener.Addr().String()
		conn, err := Dial(args)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = pb.NewPlacementServiceClient(conn).Advise(ctx, &pb.AdviseRequest{Kind: "PodGroup", Name: "train"})
		return err
	}
	if err := ask(Args{TLS: tlsArgs, TokenFile: token}); err != nil {
		t.Fatalf("mutual TLS with the token: %v", err)
	}
	if err := ask(Args{TLS: tlsArgs}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without the token: want Unauthenticated, got %v", err)
	}
	if err := ask(Args{TokenFile: token}); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext to a TLS advisor: want Unavailable, got %v", err)
	}
	if _, err := Dial(Args{Address: "x", TLS: TLSArgs{CAFile: filepath.Join(dir, "missing.crt")}}); err == nil ||
		!strings.Contains(err.Error(), "tls.caFile") {
		t.Fatalf("a CA file that cannot be read is an error naming tls.caFile, got %v", err)
	}
	if _, err := Dial(Args{Address: "x", TokenFile: filepath.Join(dir, "missing")}); err == nil ||
		!strings.Contains(err.Error(), "tokenFile") {
		t.Fatalf("a token file that cannot be read is an error naming tokenFile, got %v", err)
	}
}
