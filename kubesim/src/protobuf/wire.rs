//! The protobuf wire format: reading one message's fields (varints, fixed-width and
//! length-delimited values, with every length checked against the buffer) and writing them.

/// One field's value as it appears on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (a `double` here).
    Fixed64(u64),
    /// Wire type 5 (no served kind has a 32-bit fixed field; read to be skipped).
    Fixed32,
    /// Wire type 2: strings, bytes, messages, map entries and packed scalars.
    Bytes(&'a [u8]),
}

impl Wire<'_> {
    /// The wire type number, for error messages.
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Wire::Varint(_) => 0,
            Wire::Fixed64(_) => 1,
            Wire::Bytes(_) => 2,
            Wire::Fixed32 => 5,
        }
    }
}

/// Reads a varint at `pos`, advancing it.
pub(super) fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or("unexpected EOF in a varint")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint overflows 64 bits".to_string())
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, len: u64) -> Result<&'a [u8], String> {
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| pos.checked_add(len))
        .filter(|end| *end <= buf.len())
        .ok_or_else(|| {
            format!(
                "unexpected EOF: a length of {len} with {} bytes left",
                buf.len() - *pos
            )
        })?;
    let bytes = &buf[*pos..end];
    *pos = end;
    Ok(bytes)
}

/// An iterator over the (field number, value) pairs of one message.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// The fields of the message in `buf`, in wire order.
pub(crate) fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0 }
}

impl<'a> Fields<'a> {
    fn read(&mut self) -> Result<(u64, Wire<'a>), String> {
        let key = varint(self.buf, &mut self.pos)?;
        let (number, wire_type) = (key >> 3, key & 7);
        if number == 0 {
            return Err("field number 0 is not allowed".to_string());
        }
        let value = match wire_type {
            0 => Wire::Varint(varint(self.buf, &mut self.pos)?),
            1 => {
                let b = take(self.buf, &mut self.pos, 8)?;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "fixed64")?))
            }
            5 => {
                take(self.buf, &mut self.pos, 4)?;
                Wire::Fixed32
            }
            2 => {
                let len = varint(self.buf, &mut self.pos)?;
                Wire::Bytes(take(self.buf, &mut self.pos, len)?)
            }
            other => {
                return Err(format!(
                    "unsupported wire type {other} for field number {number}"
                ));
            }
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Wire<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let item = self.read();
        if item.is_err() {
            self.pos = self.buf.len();
        }
        Some(item)
    }
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a field key.
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_overflow_is_refused() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint(&out, &mut 0).unwrap(), v);
        }
        assert!(varint(&[0xff; 11], &mut 0).is_err());
        assert!(varint(&[0x80], &mut 0).is_err());
    }

    #[test]
    fn lengths_past_the_end_are_refused() {
        let mut body = Vec::new();
        put_key(&mut body, 1, 2);
        put_varint(&mut body, u64::MAX);
        let err = fields(&body).next().unwrap().unwrap_err();
        assert!(err.contains("unexpected EOF"), "{err}");
        assert!(fields(&[0x0a, 0x05, b'a']).next().unwrap().is_err());
        assert!(fields(&[0x0b]).next().unwrap().is_err(), "wire type 3");
        assert!(fields(&[0x00, 0x00]).next().unwrap().is_err(), "field 0");
    }
}
