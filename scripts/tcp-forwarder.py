#!/usr/bin/env python3
"""A TCP forwarder on loopback that stands for a network address that moves
(a virtual IP following a database's primary) or goes silent (a cut network).

    tcp-forwarder.py --control FILE [--listen PORT]

It prints "listening PORT" once it accepts connections, then follows FILE,
read again whenever it changes, which holds one line:

    forward PORT   new connections go to 127.0.0.1:PORT; those already open
                   stay with the server they reached, as they do when a
                   virtual IP moves
    blackhole      nothing is relayed, either way, and nothing is closed:
                   connections stay open and silent, as across a cut network
    refuse         new connections are closed at once

It stops on SIGTERM or SIGINT. The outage tests run it between the brokers and
PostgreSQL; an operator can run it the same way in front of a staging database.
"""
import argparse
import asyncio
import os
import signal
import sys


class Control:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.mode = ("refuse", None)

    def read(self):
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            return self.mode
        if mtime != self.mtime:
            self.mtime = mtime
            with open(self.path) as f:
                words = f.read().split()
            if words[:1] == ["forward"] and len(words) == 2:
                self.mode = ("forward", int(words[1]))
            elif words[:1] in (["blackhole"], ["refuse"]):
                self.mode = (words[0], None)
            else:
                print(f"tcp-forwarder: ignoring control line {' '.join(words)!r}", file=sys.stderr)
        return self.mode


async def relay(reader, writer, control):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if control.read()[0] == "blackhole":
                continue
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        # A silent network closes nothing.
        while control.read()[0] == "blackhole":
            await asyncio.sleep(0.05)
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--control", required=True)
    parser.add_argument("--listen", type=int, default=0)
    arguments = parser.parse_args()
    control = Control(arguments.control)

    async def accepted(client_reader, client_writer):
        mode, port = control.read()
        if mode == "refuse":
            client_writer.close()
            return
        if mode == "blackhole":
            # Accepted by the network, answered by nobody.
            while control.read()[0] == "blackhole":
                await asyncio.sleep(0.05)
            client_writer.close()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            relay(client_reader, server_writer, control), relay(server_reader, client_writer, control)
        )

    server = await asyncio.start_server(accepted, "127.0.0.1", arguments.listen)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
