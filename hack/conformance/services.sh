# services.sh, sourced by hack/conformance.sh: the services a run needs beside the kubelet (the
# project registry check, the private registry, fakelogind on a private system bus).
# shellcheck shell=bash

# check_registry makes sure the project registry (hack/images.sh push, in prepare) serves the
# suite's images on 127.0.0.1:5000, containerd's mirror of registry.k8s.io: specs that pull
# (imagePullPolicy Always, image GC) then work without a network.
PRIVATE_REGISTRY_PID=
check_registry() {
	curl -fsS -o /dev/null http://127.0.0.1:5000/v2/e2e-test-images/agnhost/manifests/2.53 && return 0
	echo "conformance: the project registry does not serve agnhost on 127.0.0.1:5000; run hack/images.sh conformance push" >&2
	return 1
}

# start_private_registry runs the CNCF distribution registry (make registries) on
# 127.0.0.1:5443 with TLS (the CA the project containerd trusts for that host) and htpasswd, with
# the busybox test image in it as the suite's authenticated image, and points the suite's
# gcAuthenticatedRegistry there (KUBE_TEST_REPO_LIST): "should not be able to pull from private
# registry without secret" then meets a registry that asks for credentials, not an unreachable host.
start_private_registry() {
	local dir=$OUT/private-registry tls=/var/lib/nodelet/registry-tls user i
	rm -rf "$dir" && mkdir -p "$dir"
	user="conformance:$(head -c 12 /dev/urandom | base64 | tr -dc 'a-zA-Z0-9')"
	_output/bin/regtool tls -dir "$tls" >/dev/null
	_output/bin/regtool htpasswd -out "$dir/htpasswd" -user "$user" >/dev/null
	cat >"$dir/config.yml" <<-EOF
		version: 0.1
		log:
		  level: info
		storage:
		  filesystem:
		    rootdirectory: $dir/store
		http:
		  addr: 127.0.0.1:5443
		  tls:
		    certificate: $tls/tls.crt
		    key: $tls/tls.key
		auth:
		  htpasswd:
		    realm: nodelet-conformance
		    path: $dir/htpasswd
	EOF
	_output/bin/distribution-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
	PRIVATE_REGISTRY_PID=$!
	for ((i = 0; i < 50; i++)); do
		[[ $(curl -sS -o /dev/null -w '%{http_code}' --cacert "$tls/ca.crt" https://127.0.0.1:5443/v2/ 2>/dev/null) == 401 ]] && break
		kill -0 "$PRIVATE_REGISTRY_PID" 2>/dev/null || break
		sleep 0.2
	done
	_output/bin/regtool push -tar _output/images/busybox.tar -src nodelet.local/busybox:1.36 \
		-dst 127.0.0.1:5443/authenticated-image-pulling/alpine:3.7 -ca "$tls/ca.crt" -user "$user" >>"$dir/registry.log" 2>&1 || {
		echo "conformance: the private registry did not take the authenticated image; see $dir/registry.log" >&2
		return 1
	}
	printf 'gcAuthenticatedRegistry: 127.0.0.1:5443/authenticated-image-pulling\n' >"$dir/repo-list.yaml"
	export KUBE_TEST_REPO_LIST=$dir/repo-list.yaml
}

# start_fakelogind: the GracefulNodeShutdown specs need systemd-logind on the system bus (the
# kubelet holds its inhibitor lock; the suite sends PrepareForShutdown). These machines run no
# systemd, so test/fakelogind serves a private system bus for both the suite and the kubelet
# (DBUS_SYSTEM_BUS_ADDRESS), each kubelet on a fresh one with logind's default 5s delay.
FAKELOGIND_PID=
start_fakelogind() {
	local dir=$RUN_DIR/fakelogind line
	rm -f /etc/systemd/logind.conf.d/99-kubelet.conf # the last kubelet's delay override
	mkdir -p "$dir"
	coproc FAKELOGIND { exec "$OUT/bin/fakelogind" -dir "$dir" 2>>"$dir/log"; } # sets FAKELOGIND_PID
	if read -r -t 20 line <&"${FAKELOGIND[0]}" && [[ $line == DBUS_SYSTEM_BUS_ADDRESS=* ]]; then
		export DBUS_SYSTEM_BUS_ADDRESS=${line#DBUS_SYSTEM_BUS_ADDRESS=}
	else
		echo "conformance: fakelogind did not start (see $dir/log); the GracefulNodeShutdown specs will fail" >&2
	fi
}

stop_fakelogind() {
	[[ -z ${FAKELOGIND_PID:-} ]] || { kill "$FAKELOGIND_PID" 2>/dev/null; wait "$FAKELOGIND_PID" 2>/dev/null || true; }
	FAKELOGIND_PID=
	unset DBUS_SYSTEM_BUS_ADDRESS
	rm -f /etc/systemd/logind.conf.d/99-kubelet.conf
	return 0
}

stop_registries() {
	[[ -z $PRIVATE_REGISTRY_PID ]] || kill "$PRIVATE_REGISTRY_PID" 2>/dev/null
	return 0
}
