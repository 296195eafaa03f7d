package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nodelet/nodelet/internal/app"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/lib/version"
)

// runFunc starts nodelet with a complete configuration; app.Run in production.
type runFunc func(ctx context.Context, cfg *config.Config) error

const longHelp = `nodelet is a Kubernetes node agent written from scratch. It speaks the
Container Runtime Interface to a runtime such as containerd and keeps the pods
assigned to this node running.

Without --kubeconfig it runs standalone: it starts the static pods found in
--pod-manifest-path or at --manifest-url and needs no API server. With
--kubeconfig it also registers the node and runs the pods bound to it.

Settings come from a KubeletConfiguration file (--config); flags given on the
command line take precedence over the file.`

func newRootCommand(run runFunc, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nodelet",
		Short: "A from-scratch Kubernetes node agent (kubelet)",
		Long:  longHelp,
		Args:  cobra.NoArgs,
		// Errors are printed once by execute; usage only on --help.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun 'nodelet --help' for usage.", err)
	})

	flags := config.AddFlags(cmd.Flags())
	printVersion := cmd.Flags().Bool("version", false, "Print the Kubernetes version nodelet reports (as upstream's kubelet --version) and quit.")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *printVersion {
			fmt.Fprintln(stdout, "Kubernetes "+version.KubeletVersion)
			return nil
		}
		cfg, err := flags.Complete(cmd.Flags())
		if err != nil {
			return err
		}
		return run(cmd.Context(), cfg)
	}
	cmd.AddCommand(newVersionCommand(stdout), newExplainCommand(stdout), newRunCommand(app.RunPod, stdout, stderr))
	return cmd
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the nodelet version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, version.String())
		},
	}
}

// execute runs cmd with args and returns the process exit code, printing any
// error to stderr.
func execute(ctx context.Context, cmd *cobra.Command, args []string, stderr io.Writer) int {
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		var exit exitError
		if errors.As(err, &exit) {
			if exit.msg != "" {
				fmt.Fprintln(stderr, exit.msg)
			}
			return exit.code
		}
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
