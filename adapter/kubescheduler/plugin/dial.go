package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial is the client connection to the advisor the args name: plaintext, TLS trusting
// tls.caFile, mutual TLS with tls.certFile and tls.keyFile; with tokenFile, every call carries
// "authorization: Bearer <the file's token>", read again on each call so a rotated token is used.
// A file that cannot be read is an error naming its arg.
func Dial(args Args) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{}
	t := args.TLS
	if t.CAFile == "" && t.CertFile == "" && t.KeyFile == "" {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return nil, fmt.Errorf("%s args: tls.caFile: %w", Name, err)
			}
			config.RootCAs = x509.NewCertPool()
			if !config.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s args: tls.caFile: %s holds no PEM certificate", Name, t.CAFile)
			}
		}
		if t.CertFile != "" || t.KeyFile != "" {
			pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("%s args: tls.certFile and tls.keyFile: %w", Name, err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	}
	if args.TokenFile != "" {
		if _, err := os.ReadFile(args.TokenFile); err != nil {
			return nil, fmt.Errorf("%s args: tokenFile: %w", Name, err)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(tokenFile(args.TokenFile)))
	}
	conn, err := grpc.NewClient(args.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s args: address: %w", Name, err)
	}
	return conn, nil
}

// tokenFile is a bearer token read from its file on every call.
type tokenFile string

func (f tokenFile) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	data, err := os.ReadFile(string(f))
	if err != nil {
		return nil, fmt.Errorf("tokenFile: %w", err)
	}
	return map[string]string{"authorization": "Bearer " + strings.TrimSpace(string(data))}, nil
}

// RequireTransportSecurity is false: a loopback advisor in the scheduler's pod may be plaintext.
func (f tokenFile) RequireTransportSecurity() bool { return false }
