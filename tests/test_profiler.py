"""tp.profiler's memory profile: live arrays by the user's lines, in pprof's format. The file
is read back two ways: by read_memory_profile, and by the protobuf library against
pprof's own message layout (perftools.profiles.Profile, built here from its field numbers),
so the encoder is checked by an independent decoder."""
import gzip

import numpy as np
import pytest

import transpile as tp


def loss(params, x, y):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum((x - y) ** 2)


def _profile(tmp_path):
    rng = np.random.default_rng()
    params = [(rng.standard_normal((128, 128)), rng.standard_normal(128)) for _ in range(3)]
    x, y = rng.standard_normal((256, 128)), rng.standard_normal((256, 128))
    tp.vjp(loss, params, x, y)                    # generate the code before tracing
    tp.profiler.start_memory_tracing()
    try:
        kept = np.ones((500, 400))                 # 1.6 MB alive at the snapshot
        out, pullback = tp.vjp(loss, params, x, y)  # keeps the values of the forward pass
        path = tmp_path / "memory.prof"
        tp.profiler.save_device_memory_profile(str(path))
    finally:
        tp.profiler.stop_memory_tracing()
    del kept, pullback
    return path


def test_live_arrays_are_charged_to_the_users_lines(tmp_path):
    path = _profile(tmp_path)
    samples = tp.profiler.read_memory_profile(str(path))
    by_line = {}
    for count, size, stack in samples:
        if stack and stack[0][0] == __file__:
            by_line[stack[0][1]] = by_line.get(stack[0][1], 0) + size
    first = loss.__code__.co_firstlineno
    # three trips keep x (256 x 128 float64): at least 3 * 262,144 bytes; x @ W, read back
    # only for its shape, is kept as a stand-in of no memory (rt.shape_only)
    assert 3 * 256 * 128 * 8 <= by_line[first + 2] < 6 * 256 * 128 * 8
    kept_line = next(line for line in by_line if line > first + 10)
    assert by_line[kept_line] == 500 * 400 * 8
    table = tp.profiler.memory_table(str(path))
    assert "x = np.tanh(x @ W + b)" in table and "np.ones((500, 400))" in table


def test_the_file_is_a_pprof_profile(tmp_path):
    descriptor_pb2 = pytest.importorskip("google.protobuf.descriptor_pb2")
    from google.protobuf import descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="profile.proto",
                                               package="perftools.profiles")

    def message(name, fields):
        m = proto.message_type.add(name=name)
        for field_name, number, kind, repeated, type_name in fields:
            f = m.field.add(name=field_name, number=number, type=kind,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if type_name:
                f.type_name = ".perftools.profiles." + type_name
    message("ValueType", [("type", 1, F.TYPE_INT64, False, None),
                          ("unit", 2, F.TYPE_INT64, False, None)])
    message("Sample", [("location_id", 1, F.TYPE_UINT64, True, None),
                       ("value", 2, F.TYPE_INT64, True, None)])
    message("Line", [("function_id", 1, F.TYPE_UINT64, False, None),
                     ("line", 2, F.TYPE_INT64, False, None)])
    message("Location", [("id", 1, F.TYPE_UINT64, False, None),
                         ("line", 4, F.TYPE_MESSAGE, True, "Line")])
    message("Function", [("id", 1, F.TYPE_UINT64, False, None),
                         ("name", 2, F.TYPE_INT64, False, None),
                         ("system_name", 3, F.TYPE_INT64, False, None),
                         ("filename", 4, F.TYPE_INT64, False, None)])
    message("Profile", [("sample_type", 1, F.TYPE_MESSAGE, True, "ValueType"),
                        ("sample", 2, F.TYPE_MESSAGE, True, "Sample"),
                        ("location", 4, F.TYPE_MESSAGE, True, "Location"),
                        ("function", 5, F.TYPE_MESSAGE, True, "Function"),
                        ("string_table", 6, F.TYPE_STRING, True, None),
                        ("time_nanos", 9, F.TYPE_INT64, False, None),
                        ("default_sample_type", 14, F.TYPE_INT64, False, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    Profile = message_factory.GetMessageClass(
        pool.FindMessageTypeByName("perftools.profiles.Profile"))
    path = _profile(tmp_path)
    parsed = Profile()
    parsed.ParseFromString(gzip.open(path).read())
    strings = list(parsed.string_table)
    assert strings[0] == ""
    assert [(strings[t.type], strings[t.unit]) for t in parsed.sample_type] == \
        [("objects", "count"), ("space", "bytes")]
    assert strings[parsed.default_sample_type] == "space"
    functions = {f.id: f for f in parsed.function}
    locations = {loc.id: loc for loc in parsed.location}
    ours = tp.profiler.read_memory_profile(str(path))
    assert len(parsed.sample) == len(ours)
    for sample, (count, size, stack) in zip(parsed.sample, ours):
        assert list(sample.value) == [count, size]
        frames = [(strings[functions[locations[i].line[0].function_id].filename],
                   locations[i].line[0].line,
                   strings[functions[locations[i].line[0].function_id].name])
                  for i in sample.location_id]
        assert frames == stack
