// The part of etcd's v3 gRPC API the adapter speaks (api/etcdserverpb/rpc.proto and
// api/mvccpb/kv.proto), written as a protobufjs JSON descriptor: the field numbers are etcd's, the
// messages and fields the adapter never sends or reads are left out (protobuf skips unknown fields),
// and there is no .proto file to locate at run time from both the ESM and the CommonJS build.

const int64 = (id: number) => ({ type: 'int64', id });
const bytes = (id: number) => ({ type: 'bytes', id });
const bool = (id: number) => ({ type: 'bool', id });
const msg = (type: string, id: number) => ({ type, id });
const repeated = (type: string, id: number) => ({ rule: 'repeated', type, id });
const rpc = (requestType: string, responseType: string, streaming = false) => ({
  requestType,
  responseType,
  ...(streaming ? { requestStream: true, responseStream: true } : {}),
});

export const ETCD_PROTO = {
  nested: {
    mvccpb: {
      nested: {
        KeyValue: {
          fields: {
            key: bytes(1),
            create_revision: int64(2),
            mod_revision: int64(3),
            version: int64(4),
            value: bytes(5),
            lease: int64(6),
          },
        },
        Event: {
          fields: { type: msg('EventType', 1), kv: msg('KeyValue', 2), prev_kv: msg('KeyValue', 3) },
          nested: { EventType: { values: { PUT: 0, DELETE: 1 } } },
        },
      },
    },
    etcdserverpb: {
      nested: {
        ResponseHeader: {
          fields: { cluster_id: { type: 'uint64', id: 1 }, member_id: { type: 'uint64', id: 2 }, revision: int64(3) },
        },
        RangeRequest: {
          fields: {
            key: bytes(1),
            range_end: bytes(2),
            limit: int64(3),
            sort_order: msg('SortOrder', 5),
            sort_target: msg('SortTarget', 6),
            keys_only: bool(8),
            count_only: bool(9),
            min_create_revision: int64(12),
            max_create_revision: int64(13),
          },
          nested: {
            SortOrder: { values: { NONE: 0, ASCEND: 1, DESCEND: 2 } },
            SortTarget: { values: { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } },
          },
        },
        RangeResponse: {
          fields: { header: msg('ResponseHeader', 1), kvs: repeated('mvccpb.KeyValue', 2), more: bool(3), count: int64(4) },
        },
        PutRequest: { fields: { key: bytes(1), value: bytes(2), lease: int64(3) } },
        PutResponse: { fields: { header: msg('ResponseHeader', 1) } },
        DeleteRangeRequest: { fields: { key: bytes(1), range_end: bytes(2), prev_kv: bool(3) } },
        DeleteRangeResponse: {
          fields: { header: msg('ResponseHeader', 1), deleted: int64(2), prev_kvs: repeated('mvccpb.KeyValue', 3) },
        },
        RequestOp: {
          oneofs: { request: { oneof: ['request_range', 'request_put', 'request_delete_range'] } },
          fields: {
            request_range: msg('RangeRequest', 1),
            request_put: msg('PutRequest', 2),
            request_delete_range: msg('DeleteRangeRequest', 3),
          },
        },
        ResponseOp: {
          oneofs: { response: { oneof: ['response_range', 'response_put', 'response_delete_range'] } },
          fields: {
            response_range: msg('RangeResponse', 1),
            response_put: msg('PutResponse', 2),
            response_delete_range: msg('DeleteRangeResponse', 3),
          },
        },
        Compare: {
          oneofs: { target_union: { oneof: ['version', 'create_revision', 'mod_revision', 'value', 'lease'] } },
          fields: {
            result: msg('CompareResult', 1),
            target: msg('CompareTarget', 2),
            key: bytes(3),
            version: int64(4),
            create_revision: int64(5),
            mod_revision: int64(6),
            value: bytes(7),
            lease: int64(8),
          },
          nested: {
            CompareResult: { values: { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } },
            CompareTarget: { values: { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } },
          },
        },
        TxnRequest: {
          fields: { compare: repeated('Compare', 1), success: repeated('RequestOp', 2), failure: repeated('RequestOp', 3) },
        },
        TxnResponse: { fields: { header: msg('ResponseHeader', 1), succeeded: bool(2), responses: repeated('ResponseOp', 3) } },
        WatchRequest: {
          oneofs: { request_union: { oneof: ['create_request', 'cancel_request'] } },
          fields: { create_request: msg('WatchCreateRequest', 1), cancel_request: msg('WatchCancelRequest', 2) },
        },
        WatchCreateRequest: {
          fields: {
            key: bytes(1),
            range_end: bytes(2),
            start_revision: int64(3),
            filters: repeated('FilterType', 5),
            watch_id: int64(7),
          },
          nested: { FilterType: { values: { NOPUT: 0, NODELETE: 1 } } },
        },
        WatchCancelRequest: { fields: { watch_id: int64(1) } },
        WatchResponse: {
          fields: {
            header: msg('ResponseHeader', 1),
            watch_id: int64(2),
            created: bool(3),
            canceled: bool(4),
            compact_revision: int64(5),
            cancel_reason: { type: 'string', id: 6 },
            events: repeated('mvccpb.Event', 11),
          },
        },
        LeaseGrantRequest: { fields: { TTL: int64(1), ID: int64(2) } },
        LeaseGrantResponse: { fields: { header: msg('ResponseHeader', 1), ID: int64(2), TTL: int64(3), error: { type: 'string', id: 4 } } },
        LeaseRevokeRequest: { fields: { ID: int64(1) } },
        LeaseRevokeResponse: { fields: { header: msg('ResponseHeader', 1) } },
        LeaseKeepAliveRequest: { fields: { ID: int64(1) } },
        LeaseKeepAliveResponse: { fields: { header: msg('ResponseHeader', 1), ID: int64(2), TTL: int64(3) } },
        KV: {
          methods: {
            Range: rpc('RangeRequest', 'RangeResponse'),
            DeleteRange: rpc('DeleteRangeRequest', 'DeleteRangeResponse'),
            Txn: rpc('TxnRequest', 'TxnResponse'),
          },
        },
        Watch: { methods: { Watch: rpc('WatchRequest', 'WatchResponse', true) } },
        Lease: {
          methods: {
            LeaseGrant: rpc('LeaseGrantRequest', 'LeaseGrantResponse'),
            LeaseRevoke: rpc('LeaseRevokeRequest', 'LeaseRevokeResponse'),
            LeaseKeepAlive: rpc('LeaseKeepAliveRequest', 'LeaseKeepAliveResponse', true),
          },
        },
      },
    },
  },
};
