"""A TCP relay in front of a server on loopback that a test can stall: a slow or unreachable store
without hurting the server itself (SeaweedFS answers HTTP 500 for minutes after a SIGSTOP of its
own, which would test SeaweedFS rather than us).

    with StallProxy(target_port) as proxy:    # listening on proxy.port
        proxy.endpoint                        # http://127.0.0.1:<port>
        proxy.stall(); proxy.flow()           # stop relaying bytes (connections stay open); go on

While stalled, connections are accepted and bytes wait in the sockets: a client sees a peer that
does not answer, as with a frozen host or a saturated link.
"""

import socket
import threading


class StallProxy:
    def __init__(self, target_port, host="127.0.0.1"):
        self.target = (host, target_port)
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://{host}:{self.port}"
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self.flowing.clear()

    def flow(self):
        self.flowing.set()

    def _accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                self.flowing.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed.set()
        self.flowing.set()
        self.listener.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
