package testutil

import (
	"os"
	"testing"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// RealCRIEnv names the real runtime's endpoint for the tests tagged `real`
// (hack/real-tests.sh sets it).
const RealCRIEnv = "NODELET_E2E_CRI"

// RealCRI connects to the runtime RealCRIEnv names and closes the connection when the test
// ends; without it the test is skipped (hack/real-tests.sh counts a skip as a failure).
func RealCRI(t testing.TB) *cri.Client {
	t.Helper()
	endpoint := os.Getenv(RealCRIEnv)
	if endpoint == "" {
		t.Skip(RealCRIEnv + " is not set; skipping the real runtime test")
	}
	client, err := cri.Connect(endpoint, "", 0)
	if err != nil {
		t.Fatalf("connecting to the runtime at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}
