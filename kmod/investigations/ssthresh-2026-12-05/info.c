#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		int fd = bpf_prog_get_fd_by_id(atoi(argv[i]));
		struct bpf_prog_info info; __u32 len = sizeof(info);
		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) { perror("info"); continue; }
		printf("%s %s run_cnt=%llu misses=%llu\n", argv[i], info.name, (unsigned long long)info.run_cnt, (unsigned long long)info.recursion_misses);
	}
	return 0;
}
