// Store clients that survive their store's death. LibTorch 1.13's TCPStore client runs a watcher
// thread (for watchKey) that throws, uncaught, when the store's process dies and resets the
// connection: std::terminate ends the whole rank. Destroying such a client joins that thread. A
// live job must outlive its store (docs/RECOVERY.md, "The store can restart"), so:
//  - keep_ranks_alive_when_the_store_dies() installs a terminate handler that parks a thread other
//    than the caller's (the main thread) whose uncaught exception is a std::system_error for a
//    lost connection (ECONNRESET, ECONNABORTED, EPIPE, ENOTCONN): that thread sleeps until the
//    process exits, which goes on. Every other call of std::terminate goes to the previous
//    handler unchanged. Once per process, from the main thread.
//  - retire_store_client(client) drops a client the caller no longer uses on a thread of its own:
//    a healthy client closes at once (its socket, and its watcher, go); one whose watcher is
//    parked keeps that thread waiting in the join until the process exits, never the caller.
//    It takes the caller's reference (an rvalue): a copy left with the caller could be the last
//    one, and the caller's thread would then run the destructor and join the parked watcher
//    (a test hung so in Collectives' destructor, which passed a copy of its member).
//    (Kept for the process's life instead, every re-formation left a connection per rank open
//    on the store: a long job with many losses ran the store out of descriptors.)
//  - store_clients.cpp also defines recv, which LibTorch's calls bind to: a watcher whose store
//    closed the connection would otherwise spin a core for ever (LibTorch 1.13 peeks the end of
//    the stream and polls again at once); it waits 50 ms on that one event instead.
//  - bound_reads_of_served_connections(port, bound), for the process that serves the store
//    (ppu-rendezvous): a read of a connection the store accepted on `port` that finds no byte
//    waits at most `bound`, then fails (ETIMEDOUT). LibTorch 1.13's server reads each request
//    whole, with blocking reads, on its one thread: a client cut off (or stopped) between two
//    packets of a request held every other client's request for as long as the cut lasted, so
//    the store fell silent for the whole job and nobody could tell the cut-off rank. A failed
//    read makes the server close that one connection (its client reconnects) and go on.
// Our own threads catch their exceptions; a lost-connection error that escapes any other thread
// is the watcher's. LibTorch 2's client has no watcher thread: the handler then never fires.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>

namespace c10d {
class Store;
}  // namespace c10d

namespace ppu {

void keep_ranks_alive_when_the_store_dies();
void retire_store_client(c10::intrusive_ptr<c10d::Store>&& client);
void bound_reads_of_served_connections(int port, std::chrono::milliseconds bound);

}  // namespace ppu
