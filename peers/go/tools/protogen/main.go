// Command protogen generates the Go code of proto/rpcarena/bench/v1/bench.proto without protoc:
// protocompile (pure Go) compiles the .proto file into a descriptor, and the official plugins
// protoc-gen-go and protoc-gen-go-grpc (pinned in go.mod as tools, built by build.sh) turn it
// into Go through the ordinary plugin protocol (a CodeGeneratorRequest on stdin, a
// CodeGeneratorResponse on stdout), exactly as protoc would drive them.
//
//	protogen -proto-root DIR -file rpcarena/bench/v1/bench.proto -go-package IMPORT/PATH \
//	         -out DIR -plugin PATH [-plugin PATH ...]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

type plugins []string

func (p *plugins) String() string     { return strings.Join(*p, ",") }
func (p *plugins) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	root := flag.String("proto-root", "", "directory the .proto import paths are relative to")
	file := flag.String("file", "", "the .proto file to generate, relative to -proto-root")
	goPackage := flag.String("go-package", "", "Go import path of the generated package")
	out := flag.String("out", "", "directory to write the generated .go files into")
	var run plugins
	flag.Var(&run, "plugin", "a protoc plugin executable (repeatable)")
	flag.Parse()
	if *root == "" || *file == "" || *goPackage == "" || *out == "" || len(run) == 0 {
		fmt.Fprintln(os.Stderr, "protogen: -proto-root, -file, -go-package, -out and at least one -plugin are required")
		os.Exit(2)
	}
	if err := generate(*root, *file, *goPackage, *out, run); err != nil {
		fmt.Fprintf(os.Stderr, "protogen: %v\n", err)
		os.Exit(1)
	}
}

func generate(root, file, goPackage, out string, run []string) error {
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: []string{root},
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := compiler.Compile(context.Background(), file)
	if err != nil {
		return fmt.Errorf("compiling %s under %s: %w", file, root, err)
	}
	if len(compiled) != 1 {
		return fmt.Errorf("compiling %s gave %d files, expected 1", file, len(compiled))
	}
	descriptor := protodesc.ToFileDescriptorProto(compiled[0])
	if descriptor.GetDependency() != nil {
		return fmt.Errorf("%s imports %v; this generator handles a self-contained file only", file, descriptor.GetDependency())
	}
	request := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{file},
		// paths=source_relative names outputs after the .proto file; M maps it to its Go package
		// (bench.proto has no go_package option, being shared by every language).
		Parameter: proto.String("paths=source_relative,M" + file + "=" + goPackage),
		ProtoFile: []*descriptorpb.FileDescriptorProto{descriptor},
	}
	input, err := proto.Marshal(request)
	if err != nil {
		return fmt.Errorf("encoding the plugin request: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, plugin := range run {
		if err := runPlugin(plugin, input, out); err != nil {
			return err
		}
	}
	return nil
}

func runPlugin(plugin string, input []byte, out string) error {
	cmd := exec.Command(plugin)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stderr = os.Stderr
	output, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("running plugin %s: %w", plugin, err)
	}
	var response pluginpb.CodeGeneratorResponse
	if err := proto.Unmarshal(output, &response); err != nil {
		return fmt.Errorf("plugin %s answered something that is not a CodeGeneratorResponse: %w", plugin, err)
	}
	if response.Error != nil {
		return fmt.Errorf("plugin %s: %s", plugin, response.GetError())
	}
	for _, generated := range response.GetFile() {
		// One package: the files go flat into out, whatever directory the plugin names.
		path := filepath.Join(out, filepath.Base(generated.GetName()))
		if err := os.WriteFile(path, []byte(generated.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
