/*
 * The smallest complete rxpath program: a software NIC fed by the traffic
 * generator, one worker running the receive path, and a sink that checks
 * each reassembled UDP datagram. Build against an installed rxpath with
 *   cc receive.c $(pkg-config --cflags --libs rxpath) -o receive
 */
#include <errno.h>
#include <stdio.h>

#include <rxpath/sim.h>
#include <rxpath/worker.h>

static unsigned long delivered, bad;

/* Called for every complete datagram (data at the UDP payload); the sink
 * owns the packet and must consume it. */
static void on_datagram(void *arg, struct rxp_worker *w, struct rxp_pkt *pkt)
{
	static uint8_t buf[65536];

	(void)arg;
	(void)w;
	if (rxp_pkt_copy_bits(pkt, 0, buf, pkt->len) || rxp_gen_verify(buf, pkt->len))
		bad++;
	delivered++;
	rxp_pkt_consume(pkt);
}

int main(void)
{
	struct rxp_pktpool *pool = rxp_pktpool_create(NULL); /* defaults: 4096 packets */
	struct rxp_gen_config traffic = {
		.seed = 1,
		.count = 1000,
		.max_payload = 30000,
		.ipv6_pct = 50,
		.mtu = 1500,
	};
	struct rxp_sim_config nic = {.nqueues = 1, .gen = &traffic};
	struct rxp_dev *dev = rxp_sim_open(&nic, pool);
	struct rxp_worker_group *g = rxp_worker_group_create(&(struct rxp_worker_config){
		.nworkers = 1, .dev = dev, .pp = pool, .on_datagram = on_datagram});
	uint64_t leaked;

	if (!pool || !dev || !g)
		return 1;
	while (rxp_worker_poll(rxp_worker_get(g, 0)) != -ENODATA)
		; /* one NAPI-style iteration per call */
	rxp_worker_group_destroy(g);
	leaked = rxp_dev_close(dev) + rxp_pktpool_destroy(pool);
	printf("%lu datagrams delivered, %lu bad, %llu leaked\n", delivered, bad,
	       (unsigned long long)leaked);
	return delivered == traffic.count && !bad && !leaked ? 0 : 1;
}
