import ctypes, signal, sys, time
lib = ctypes.CDLL("libbpf.so.1")
for f in ("bpf_object__open_file", "bpf_object__next_program", "bpf_object__next_map", "bpf_program__attach",
          "bpf_map__attach_struct_ops", "bpf_program__name", "bpf_map__name"):
    getattr(lib, f).restype = ctypes.c_void_p
lib.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
lib.bpf_object__load.argtypes = [ctypes.c_void_p]
lib.bpf_object__next_program.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.bpf_object__next_map.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
lib.bpf_program__attach.argtypes = [ctypes.c_void_p]
lib.bpf_map__attach_struct_ops.argtypes = [ctypes.c_void_p]
lib.bpf_program__name.argtypes = [ctypes.c_void_p]
lib.bpf_map__name.argtypes = [ctypes.c_void_p]
lib.bpf_program__type.argtypes = [ctypes.c_void_p]
lib.bpf_map__type.argtypes = [ctypes.c_void_p]
obj = lib.bpf_object__open_file(sys.argv[1].encode(), None)
assert obj
r = lib.bpf_object__load(obj); assert r == 0, r
links = []
p = None
while True:
    p = lib.bpf_object__next_program(obj, p)
    if not p: break
    name = ctypes.string_at(lib.bpf_program__name(p)).decode()
    if name.startswith(("tp_", "t2_")):
        l = lib.bpf_program__attach(p); print("attach", name, bool(l)); links.append(l)
m = None
while True:
    m = lib.bpf_object__next_map(obj, m)
    if not m: break
    name = ctypes.string_at(lib.bpf_map__name(m)).decode()
    if lib.bpf_map__type(m) == 26:
        l = lib.bpf_map__attach_struct_ops(m); print("struct_ops", name, bool(l)); links.append(l)
sys.stdout.flush()
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
while True: time.sleep(1)
