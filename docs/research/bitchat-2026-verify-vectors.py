import hashlib, hmac, struct
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives import serialization
H=bytes.fromhex
def raw_pub(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
ok=lambda c,m: print(("PASS " if c else "FAIL ")+m)

# --- Android ClientRewriteWireContractTest ---
v1=H("01020701020304050607080000031011121314151617aabbcc")
ok(len(v1)==14+8+3 and v1[11]==0 and v1[12:14]==b'\x00\x03',"v1 packet layout (14-byte header)")
v2=H("021105000000000000002a0b00000002"+"0102030405060708"+"1112131415161718"+"02"+"2122232425262728"+"3132333435363738"+"dead")+b'\x5a'*64
ok(v2[11]==0x0b and struct.unpack(">I",v2[12:16])[0]==2,"v2 flags 0x0b (recipient|signature|route), payloadLength excludes route")
msg=H("00010203040506070802696403626f6200026869")
ok(msg[0]==0 and msg[1:9]==H("0102030405060708") and msg[9:12]==b'\x02id' and msg[12:16]==b'\x03bob' and msg[16:]==b'\x00\x02hi',"minimal BitchatMessage")
opt=H("7f000000000000002a"+"016d"+"02c3a9"+"000568656c6c6f"+"016f"+"0172"+"0170"+"02"+"0161"+"02ceb2"+"0163")
ok(opt[0]==0x7f and "é".encode()==H("c3a9") and "β".encode()==H("ceb2"),"optional-field BitchatMessage flags 0x7f")
ok(H("0100026d3101026869")[1:]==H("00026d3101026869"),"noise private message wrapper")
frag=H("00010203040506070001000302aabb"); ok(len(frag)==13+2,"fragment 13-byte header")
sync_new=H("0100011302000401020304030002aabb"+"040001a00500080102030405060708")
ok(sync_new[16:20]==H("040001a0") and (0xa0 == (1<<5)|(1<<7)),"sync types 0xa0 = fragment(bit5)|fileTransfer(bit7)")
ann=H("0103626f620220")+b'\x11'*32+H("0320")+b'\x22'*32+H("050200017f02cafe")
ok(ann[-8:-4]==H("05020001"),"announce caps TLV 0x05 len2 00 01 = bit 8")
ft=H("01000161020004000000020300016d0400000002dead")
ok(ft==b'\x01'+struct.pack(">H",1)+b'a'+b'\x02'+struct.pack(">H",4)+struct.pack(">I",2)+b'\x03'+struct.pack(">H",1)+b'm'+b'\x04'+struct.pack(">I",2)+H("dead"),"file packet mixed widths")

# --- AnnounceV2Test joint vector ---
j=H("012c030000018bcfe5680000004cf7c08c528506a37401040000006402404568f61d61d6cbfb"
    "5313c7731f629959000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    "202122232425262728292a2b2c2d2e2f03020040")
ok(j[1]==0x2c and j[2]==3 and struct.unpack(">Q",j[3:11])[0]==1_700_000_000_000 and j[11]==0 and struct.unpack(">H",j[12:14])[0]==len(j)-22,"announceV2 joint packet header")
p=j[22:]; ok(p[:6]==H("010400000064") and p[6:8]==H("0240") and p[8:24]==H("4568f61d61d6cbfb5313c7731f629959") and p[24:72]==bytes(range(48)) and p[72:]==H("03020040"),"announceV2 TLVs (caps 0x4000 = bit14)")

# --- AuthenticatedPeerState ---
sk=bytes(range(32)); aps=H("01010200010220")+sk
ok(len(aps)==39,"peer state legacy size 1+4+34")

# --- Courier (Android CourierEnvelopeTest / BridgeProtocolInteropTest) ---
tag=hmac.new(bytes(range(32)), b"bitchat-courier-tag-v1"+struct.pack(">I",1), hashlib.sha256).digest()[:16]
ok(tag.hex()=="f7b87836e588a2b31b306605b3313744","courier tag HMAC vector (Android BridgeProtocolInteropTest)")
carrier=H("010001030200067534707275790300027b7d")
ok(carrier==b'\x01\x00\x01\x03'+b'\x02\x00\x06u4pruy'+b'\x03\x00\x02{}',"nostr carrier TLV16")
pk=H("18"+"626974636861742d7072656b65792d62756e646c652d7631")
ok(pk[1:]==b"bitchat-prekey-bundle-v1" and pk[0]==24,"prekey signing context")

# --- iOS courier-test-vectors.json ---
tag2=hmac.new(H("a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"), b"bitchat-courier-tag-v1"+struct.pack(">I",20833), hashlib.sha256).digest()[:16]
ok(tag2.hex()=="ad8514c90ca1fa6bf44e38c8a6252482","iOS courier tag vector")
ct=b"courier-vector-ciphertext-0001"
ok(hashlib.sha256(ct).digest()[:16].hex()=="bb85dcc4d8b17377c61817992df95826","iOS ciphertext hash")
env=H("010010000102030405060708090a0b0c0d0e0f020008000001a3185c500003001e636f75726965722d766563746f722d636970686572746578742d303030310400010405000411223344")
ok(len(env)==74,"iOS envelope 74 bytes")
uu=H("010407000001977420dc0001004a112233445566778899aabbccddeeff00")+env
ok(len(uu)==104,"iOS unsigned unpadded 104")
pre=bytearray(uu); pre[2]=0; pre=bytes(pre)+b'\x98'*152
ok(len(pre)==256,"iOS signing preimage 256 (ttl0 + 0x98*152)")
ok(raw_pub(H("42"*32)).hex()=="2152f8d19b791d24453242e15f2eab6cb7cffa7b6a5ed30097960e069881db12","iOS courier signing pubkey from seed 42..42")

# --- iOS spec/vectors/wire-format.json: signature over padded transcript ---
unp=H("0102030000018bcfe5680013000b010203040506070811121314151617187369676e656420626f6479")
sig=H("c846eb98426d17e4054f87578d9c84cbb98ae341ee0b78a1db3e0c12062696ac10af11176160fad96f546178d9f35ea21d01790fa7fd7b14ea9bbd09d06c1a0d")
tr=bytearray(unp); tr[2]=0; tr[11]=0x01; tr=bytes(tr); tr=tr+bytes([256-len(tr)])*(256-len(tr))
ok(tr[len(unp)]==0xd7,"transcript pad byte 0xd7")
pub=H("29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7")
ok(raw_pub(H("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"))==pub,"wire-format seed->pub")
try:
    Ed25519PublicKey.from_public_bytes(pub).verify(sig,tr); ok(True,"wire-format v1-directed-signed-rsr signature verifies over padded transcript")
except Exception as e: ok(False,"sig verify "+str(e))
a=H("0101070000018bcfe56800000007010203040506070862697463686174"); ok(len(a)==29 and 256-29==0xe3,"announce-broadcast pad 0xe3")
r=H("0221050000018bcfe568000900000004010203040506070811121314151617180221222324252627283132333435363738deadbeef"); ok(256-len(r)==0xcb,"v2 route pad 0xcb")
hs=H("0110070000018bcfe568000000200102030405060708a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"); ok(len(hs)==54 and 256-54==0xca,"handshake pad 0xca")

# --- Android GroupProtocolTest iOS vectors ---
st=H("010010000102030405060708090a0b0c0d0e0f02000468696b650300200102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f200400040000000705008f023131313131313131313131313131313131313131313131313131313131313131d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c97787370763726561746f724141414141414141414141414141414141414141414141414141414141414141a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f005616c69636506002031313131313131313131313131313131313131313131313131313131313131310700407e7dcb5210e48a2edc346f1364c0e3f3a7939a3006f318bd591e94f11b7c6d5a928042f04278bf2e5d612da02258acd686d11a8f8f310b2cc0f8b886bb13ac05")
def tlv16(b):
    o=0; out=[]
    while o<len(b):
        t=b[o]; l=struct.unpack(">H",b[o+1:o+3])[0]; out.append((t,b[o+3:o+3+l])); o+=3+l
    assert o==len(b); return out
f=dict(tlv16(st))
ok(f[2]==b"hike" and f[3]==bytes(range(1,33)) and f[4]==H("00000007"),"group state TLVs")
creator=raw_pub(b'\x11'*32); alice=raw_pub(b'\x22'*32)
ok(creator.hex()=="d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737","creator pubkey (seed 0x11) in roster")
ok(alice.hex()=="a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f0","IOS_MEMBER_PUBLIC_KEY = alice (seed 0x22)")
ctx=b"bitchat-group-v1"; body=f[1]+f[4]+hashlib.sha256(f[3]).digest()+hashlib.sha256(f[5]).digest()+hashlib.sha256(f[2]).digest()
for label,msgb in (("plain ctx",ctx+body),("len-prefixed ctx",bytes([len(ctx)])+ctx+body)):
    try: Ed25519PublicKey.from_public_bytes(creator).verify(f[7],msgb); ok(True,"group state signature verifies ("+label+")")
    except Exception: print("info: group state sig does not verify with "+label)
m=H("010010000102030405060708090a0b0c0d0e0f0200040000000703000c000102030405060708090a0b0400a6e1abbfb19fd03920bbd627b82b5d575bd8ec48fc57c70d8f7f7c3af33375ae8ac1ed189e8e17acbe8f4c77cda97e44b8084234d2d8e7825ddcfdb492ed01a4eba676a9c28fcae940b33a80a756f27af8758e6dfca33c4184cd5fa2b82fe527de32c79c9a52d8ddcd596c7e3dcc29003184adf571489a8a9a9d0b7301cdf85b45b4521e55aebf6238031af50c81d6dd639b6210e82c0ab70e19ba4d1b04c323c70f6e09b54585")
g=dict(tlv16(m))
pt=ChaCha20Poly1305(bytes(range(1,33))).decrypt(g[3],g[4],g[1]+g[2])
pf=dict(tlv16(pt))
ok(pf[1]==b"ios-vector" and pf[3]==b"alice" and pf[5]==b"meet at ridge" and struct.unpack(">Q",pf[4])[0]==1_725_000_000_123 and pf[2]==alice,"group message AEAD opens (AAD groupID||epoch) -> plaintext TLVs")
mctx=b"bitchat-group-msg-v1"; mb=g[1]+g[2]+pf[1]+pf[4]+pf[5]
for label,msgb in (("plain ctx",mctx+mb),("len-prefixed ctx",bytes([len(mctx)])+mctx+mb)):
    try: Ed25519PublicKey.from_public_bytes(alice).verify(pf[6],msgb); ok(True,"group msg signature verifies ("+label+")")
    except Exception: print("info: group msg sig does not verify with "+label)

# --- voice (fork copy of Android test) ---
ok(bytes([1,2,3,4,5,6,7,8,0,42,2,0,41,0,0,10,0x80]).hex()=="0102030405060708002a02002900000a80" and 2688==0x0a80,"voice END vector")
