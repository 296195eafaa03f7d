package kubeclient

import (
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows only the API groups nodelet talks to (client-go's kubernetes/scheme registers
// every group, which costs megabytes of memory at start). The event recorder uses it to build
// object references, so it must know Pod and Node.
var Scheme = runtime.NewScheme()

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	// The option types (ListOptions, GetOptions, ...) become query parameters through the
	// parameter codec, which needs them registered as the unversioned meta/v1 group.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	groups := runtime.SchemeBuilder{v1.AddToScheme, coordinationv1.AddToScheme, authnv1.AddToScheme, authzv1.AddToScheme, nodev1.AddToScheme, certificatesv1.AddToScheme, storagev1.AddToScheme, resourcev1beta1.AddToScheme}
	utilruntime.Must(groups.AddToScheme(Scheme))
}
