package kubeclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/reference"
)

const protobuf = "application/vnd.kubernetes.protobuf"

// request is what the fake API server saw.
type request struct {
	method, path, query, contentType, accept, userAgent string
	body                                                runtime.Object
}

// apiServer records requests and answers each with reply (JSON), as a server may when the
// client accepts protobuf or JSON.
type apiServer struct {
	t     *testing.T
	mu    sync.Mutex
	seen  []request
	reply runtime.Object
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	req := request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, contentType: r.Header.Get("Content-Type"),
		accept: r.Header.Get("Accept"), userAgent: r.UserAgent()}
	if len(data) > 0 && r.Method != http.MethodPatch {
		obj, _, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
		if err != nil {
			s.t.Errorf("%s %s: undecodable body: %v", r.Method, r.URL.Path, err)
		}
		req.body = obj
	}
	s.mu.Lock()
	s.seen = append(s.seen, req)
	reply := s.reply
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if err := codecs.LegacyCodec(v1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion,
		authnv1.SchemeGroupVersion).Encode(reply, w); err != nil {
		s.t.Errorf("encoding reply: %v", err)
	}
}

func (s *apiServer) last() request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

// startClients serves a fake API server and builds Clients from a kubeconfig pointing at it.
func startClients(t *testing.T, limits Limits) (*apiServer, *Clients) {
	t.Helper()
	api := &apiServer{t: t, reply: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	content := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + srv.URL + "}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	clients, err := New(kubeconfig, limits)
	if err != nil {
		t.Fatal(err)
	}
	return api, clients
}

func TestClientsSpeakProtobufToTheRightPaths(t *testing.T) {
	api, clients := startClients(t, Limits{ContentType: protobuf, APIQPS: 50, APIBurst: 10, EventQPS: 50, EventBurst: 10})
	ctx := context.Background()

	list := &v1.PodList{Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}
	api.reply = list
	got, err := clients.API.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(got.Items) != 1 || got.Items[0].Name != "a" {
		t.Fatalf("List = %v, %v", got, err)
	}
	r := api.last()
	if r.method != "GET" || r.path != "/api/v1/pods" || r.query != "fieldSelector=spec.nodeName%3Dn1" {
		t.Errorf("list request %s %s?%s", r.method, r.path, r.query)
	}
	if !strings.HasPrefix(r.accept, protobuf) || !strings.HasPrefix(r.userAgent, "nodelet/") {
		t.Errorf("list accept %q user agent %q", r.accept, r.userAgent)
	}

	api.reply = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if _, err := clients.API.CoreV1().Pods("ns").Patch(ctx, "p", types.StrategicMergePatchType,
		[]byte(`{}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if r := api.last(); r.method != "PATCH" || r.path != "/api/v1/namespaces/ns/pods/p/status" ||
		r.contentType != string(types.StrategicMergePatchType) {
		t.Errorf("status patch %s %s (%s)", r.method, r.path, r.contentType)
	}

	api.reply = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}
	if _, err := clients.Heartbeat.CoordinationV1().Leases("kube-node-lease").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = api.last()
	if r.method != "PUT" || r.path != "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1" ||
		r.contentType != protobuf {
		t.Errorf("lease update %s %s (%s)", r.method, r.path, r.contentType)
	}
	if _, ok := r.body.(*coordinationv1.Lease); !ok {
		t.Errorf("lease update body %T", r.body)
	}

	api.reply = &authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: true}}
	review, err := clients.API.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated {
		t.Fatalf("TokenReview = %v, %v", review, err)
	}
	if r := api.last(); r.method != "POST" || r.path != "/apis/authentication.k8s.io/v1/tokenreviews" {
		t.Errorf("token review %s %s", r.method, r.path)
	}
}

func TestClientsWithoutContentTypePreferProtobuf(t *testing.T) {
	api, clients := startClients(t, Limits{APIQPS: 50, APIBurst: 10, EventQPS: 50, EventBurst: 10})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	api.reply = node
	if _, err := clients.API.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := api.last()
	if r.path != "/api/v1/nodes" || r.contentType != protobuf || r.accept != protobuf+",application/json" {
		t.Errorf("node create %s content %q accept %q", r.path, r.contentType, r.accept)
	}
}

func TestClientsRejectQPSWithoutBurst(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	content := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:1}\n" +
		"contexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(kubeconfig, Limits{APIQPS: 5}); err == nil {
		t.Fatal("QPS 5 with burst 0 was accepted")
	}
}

func TestSchemeReferencesPodsAndNodes(t *testing.T) {
	// Objects from the API carry no TypeMeta; the recorder finds their kind in Scheme.
	for _, obj := range []runtime.Object{
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u2"}},
	} {
		ref, err := reference.GetReference(Scheme, obj)
		if err != nil {
			t.Fatalf("GetReference(%T): %v", obj, err)
		}
		if ref.APIVersion != "v1" || (ref.Kind != "Pod" && ref.Kind != "Node") {
			t.Errorf("reference %+v", ref)
		}
	}
}

func TestClientsGetConfigMapsAndSecrets(t *testing.T) {
	api, clients := startClients(t, Limits{ContentType: protobuf, APIQPS: 50, APIBurst: 10, EventQPS: 50, EventBurst: 10})
	ctx := context.Background()

	api.reply = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	cm, err := clients.API.CoreV1().ConfigMaps("ns").Get(ctx, "cm", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	if r := api.last(); r.method != "GET" || r.path != "/api/v1/namespaces/ns/configmaps/cm" {
		t.Errorf("configmap get %s %s", r.method, r.path)
	}

	api.reply = &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"k": []byte("v")}}
	s, err := clients.API.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("Secret = %v, %v", s, err)
	}
	if r := api.last(); r.method != "GET" || r.path != "/api/v1/namespaces/ns/secrets/s" {
		t.Errorf("secret get %s %s", r.method, r.path)
	}
}

func TestClientsCreateServiceAccountToken(t *testing.T) {
	api, clients := startClients(t, Limits{ContentType: protobuf, APIQPS: 50, APIBurst: 10, EventQPS: 50, EventBurst: 10})
	api.reply = &authnv1.TokenRequest{Status: authnv1.TokenRequestStatus{Token: "tok"}}
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"api"}}}
	got, err := clients.API.CoreV1().ServiceAccounts("ns").CreateToken(context.Background(), "default", req, metav1.CreateOptions{})
	if err != nil || got.Status.Token != "tok" {
		t.Fatalf("CreateToken = %v, %v", got, err)
	}
	r := api.last()
	if r.method != "POST" || r.path != "/api/v1/namespaces/ns/serviceaccounts/default/token" {
		t.Errorf("token request %s %s", r.method, r.path)
	}
	if body, ok := r.body.(*authnv1.TokenRequest); !ok || len(body.Spec.Audiences) != 1 {
		t.Errorf("token request body %#v", r.body)
	}
}
