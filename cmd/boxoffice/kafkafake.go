package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/boxoffice/boxoffice/kafka"
)

// kafkaFake runs franz-go's in-process broker (kfake) on a loopback port
// until ctx ends, so that several boxoffice processes can share a Kafka in
// tests and demos where no broker can be installed. It keeps nothing on
// disk.
func kafkaFake(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kafka-fake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "address to listen on (port 0 picks one)")
	partitions := fs.Int("partitions", kafka.DefaultPartitions, "partitions of each topic")
	fs.Usage = usage(stderr, fs, "Usage: boxoffice kafka-fake [flags]\n\nAn in-memory Kafka broker for tests and demos, never for production.\n\nFlags:")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	seeds, stop, err := kafka.StartFake(*addr, int32(*partitions))
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(stdout, "kafka-fake listening on %s\n", strings.Join(seeds, ","))
	<-ctx.Done()
	return nil
}
