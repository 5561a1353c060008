package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast/webhook"
)

// webhookKeyFile is the key's file in --data-dir unless
// --webhook-key-file says.
const webhookKeyFile = "webhook.key"

// webhookFlags are the webhook settings serve and `webhooks add` share:
// the same destinations and the same key, or a secret sealed by one could
// not be read by the other (docs/DESIGN.md, "Webhook destinations and
// secrets").
type webhookFlags struct {
	allow, keyHex, keyFile string
}

// webhookFlagsVar adds the flags; creates says whether the command
// creates a missing key file (serve) or only reads one (webhooks add).
func webhookFlagsVar(fs *pflag.FlagSet, f *webhookFlags, creates bool) {
	fs.StringVar(&f.allow, "webhook-allow-networks", "", "comma-separated networks (CIDR) webhook endpoints may be in although not public, e.g. 127.0.0.0/8 for a receiver on this host; loopback, private, link-local and unspecified addresses are refused otherwise")
	fs.StringVar(&f.keyHex, "webhook-key", "", "the key webhook secrets are encrypted with, 64 hex digits (prefer the environment: a command line is visible to other users); default: the key file's")
	file := "file of the key webhook secrets are encrypted with (64 hex digits; created when missing); default: " + webhookKeyFile + " in --data-dir"
	if !creates {
		file = "file of the key holdfast serve encrypts webhook secrets with (64 hex digits; serve creates it); default: " + webhookKeyFile + " in --data-dir"
	}
	fs.StringVar(&f.keyFile, "webhook-key-file", "", file)
}

// options are the webhook.Options the flags (and the environment) say;
// create makes a missing key file (serve), else a missing one is refused
// (webhooks add: a key of its own would seal secrets serve cannot read).
func (f *webhookFlags) options(dataDir string, create bool) (webhook.Options, error) {
	nets, err := f.networks()
	if err != nil {
		return webhook.Options{}, err
	}
	key, err := f.key(dataDir, create)
	if err != nil {
		return webhook.Options{}, err
	}
	return webhook.Options{AllowNetworks: nets, SecretKey: key}, nil
}

// networks is --webhook-allow-networks.
func (f *webhookFlags) networks() ([]netip.Prefix, error) {
	nets, err := webhook.ParseNetworks(f.allow)
	if err != nil {
		return nil, usageError("--webhook-allow-networks: %v", err)
	}
	return nets, nil
}

func parseWebhookKey(s, from string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != webhook.SecretKeySize {
		return nil, fmt.Errorf("%s: the webhook key must be %d hex digits", from, 2*webhook.SecretKeySize)
	}
	return key, nil
}

// key is --webhook-key (or HOLDFAST_WEBHOOK_KEY), else the key file's.
// A missing file is created (mode 0600, never overwritten) with a random
// key when create is set, else refused in one line with the next step.
func (f *webhookFlags) key(dataDir string, create bool) ([]byte, error) {
	if f.keyHex != "" {
		return parseWebhookKey(f.keyHex, "--webhook-key")
	}
	path := f.keyFile
	if path == "" {
		path = filepath.Join(dataDir, webhookKeyFile)
	}
	b, err := os.ReadFile(path)
	if err == nil {
		return parseWebhookKey(string(b), path)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if !create {
		where := path
		if abs, err := filepath.Abs(path); err == nil && abs != path {
			where += " (" + abs + ")"
		}
		return nil, fmt.Errorf("no webhook key in %s: the secret must be sealed with the key of the holdfast serve that delivers, which creates %s in its --data-dir; start serve with this --data-dir first, or pass its key with --webhook-key-file FILE or HOLDFAST_WEBHOOK_KEY", where, webhookKeyFile)
	}
	key := make([]byte, webhook.SecretKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return f.key(dataDir, create)
	}
	if err != nil {
		return nil, err
	}
	if _, err := w.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		w.Close()
		return nil, err
	}
	return key, w.Close()
}
